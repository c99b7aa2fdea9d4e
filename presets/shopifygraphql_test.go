package presets_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/presets"
)

// shopifyThrottledBody is a GraphQL Admin API answer to a throttled query,
// as Shopify documents it.
func shopifyThrottledBody(requested, available, restore float64) string {
	return fmt.Sprintf(`{"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED","documentation":"https://shopify.dev/api/usage/rate-limits"}}],`+
		`"extensions":{"cost":{"requestedQueryCost":%g,"actualQueryCost":null,"throttleStatus":{"maximumAvailable":2000.0,"currentlyAvailable":%g,"restoreRate":%g}}}}`,
		requested, available, restore)
}

// TestShopifyGraphQLThrottleIsCapacity answers a GraphQL query with
// Shopify's THROTTLED error (HTTP 200): the query did not run, so it is
// retried once the bucket holds its cost again, and the boundary pauses
// until then.
func TestShopifyGraphQLThrottleIsCapacity(t *testing.T) {
	const path = "/admin/api/2024-10/graphql.json"
	ok := reply{status: 200, header: []string{"Content-Type", "application/json"}, body: `{"data":{"shop":{"name":"s"}}}`}

	t.Run("short wait", func(t *testing.T) {
		// 101 points wanted, 100.5 there, 50 restored per second: 10ms.
		f := newFake(t, reply{status: 200, header: []string{"Content-Type", "application/json; charset=utf-8"}, body: shopifyThrottledBody(101, 100.5, 50)}, ok)
		lim := &recorder{}
		cl := atFake(t, f, []retrybudget.Route{presets.Shopify()}, func(cfg *retrybudget.Config) { cfg.Limiter = lim })
		start := time.Now()
		out := do(context.Background(), t, cl, f, "POST", path, "X-Shopify-Access-Token", "shpat_1")
		t.Logf("throttled query: %d arrivals", f.arrivals())
		if f.arrivals() != 2 || out.Reason != nil || out.Class != retrybudget.ClassSuccess {
			t.Fatalf("%d arrivals, class %v, reason %v; want the query sent again and answered", f.arrivals(), out.Class, out.Reason)
		}
		_, cools := lim.recorded()
		if len(cools) != 1 || !near(cools[0].until, start.Add(10*time.Millisecond), 50*time.Millisecond) {
			t.Fatalf("cooldowns %+v; want one about 10ms on", cools)
		}
	})
	t.Run("long wait", func(t *testing.T) {
		// 101 points wanted, 13 there, 50 restored per second: 1.76s.
		f := newFake(t, reply{status: 200, header: []string{"Content-Type", "application/json"}, body: shopifyThrottledBody(101, 13, 50)}, ok)
		lim := &recorder{}
		cl := atFake(t, f, []retrybudget.Route{presets.Shopify()}, func(cfg *retrybudget.Config) { cfg.Limiter = lim })
		start := time.Now()
		out := do(context.Background(), t, cl, f, "POST", path, "X-Shopify-Access-Token", "shpat_1")
		t.Logf("throttled query, 1.76s to refill: %d arrivals, reason %v", f.arrivals(), out.Reason)
		want := start.Add(1760 * time.Millisecond)
		if f.arrivals() != 1 || !errors.Is(out.Reason, retrybudget.ErrWaitTooLong) || !near(out.RetryAt, want, 100*time.Millisecond) {
			t.Fatalf("%d arrivals, reason %v, retry at %v; want one, ErrWaitTooLong, about %v", f.arrivals(), out.Reason, out.RetryAt, want)
		}
		_, cools := lim.recorded()
		if len(cools) != 1 || !near(cools[0].until, want, 100*time.Millisecond) {
			t.Fatalf("cooldowns %+v; want one until about %v", cools, want)
		}
	})
	t.Run("answered query", func(t *testing.T) {
		f := newFake(t, ok)
		cl := atFake(t, f, []retrybudget.Route{presets.Shopify()}, nil)
		out := do(context.Background(), t, cl, f, "POST", path, "X-Shopify-Access-Token", "shpat_1")
		if f.arrivals() != 1 || out.Reason != nil {
			t.Fatalf("%d arrivals, reason %v; want one answered query", f.arrivals(), out.Reason)
		}
	})
}
