package presets_test

import (
	"errors"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/presets"
)

const shopifyOrders = "https://acme.myshopify.com/admin/api/2024-10/orders.json"

func TestShopifyFullBucketPausesTheBoundary(t *testing.T) {
	tests := []struct {
		callLimit string
		pause     time.Duration // 0: none
	}{
		{"39/40", 0},
		{"40/40", 500 * time.Millisecond},
		{"42/40", 1500 * time.Millisecond},
		{"80/80", 500 * time.Millisecond},
		{"abc", 0},
		{"40/0", 0},
		{"-1/40", 0},
	}
	for _, tt := range tests {
		t.Run(tt.callLimit, func(t *testing.T) {
			f := newFake(t, reply{status: 200, header: []string{"X-Shopify-Shop-Api-Call-Limit", tt.callLimit}})
			lim := &recorder{}
			c := client(t, f, presets.Shopify(), lim, nil)
			start := time.Now()
			resp, _, _ := call(t.Context(), t, c, "GET", shopifyOrders, "X-Shopify-Access-Token", "shpat_test")
			end := time.Now()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			boundaries, cools := lim.recorded()
			if tt.pause == 0 {
				if len(cools) != 0 {
					t.Fatalf("cooldowns %+v; want none", cools)
				}
				return
			}
			if len(cools) != 1 || cools[0].until.Before(start.Add(tt.pause)) || cools[0].until.After(end.Add(tt.pause)) {
				t.Fatalf("cooldowns %+v; want one until about now+%v", cools, tt.pause)
			}
			if cools[0].boundary != boundaries[0] || boundaries[0] == "acme.myshopify.com" {
				t.Fatalf("boundary %q; want the store and a hash of the access token", boundaries[0])
			}
		})
	}
}

func TestShopify429DecimalRetryAfter(t *testing.T) {
	f := newFake(t, reply{status: 429, header: []string{"Retry-After", "2.0", "X-Shopify-Shop-Api-Call-Limit", "40/40"}})
	lim := &recorder{}
	c := client(t, f, presets.Shopify(), lim, nil)
	start := time.Now()
	_, _, out := call(t.Context(), t, c, "GET", shopifyOrders)
	if out.Attempts != 1 || out.Class != retrybudget.ClassCapacity || !errors.Is(out.Reason, retrybudget.ErrWaitTooLong) {
		t.Fatalf("attempts %d, class %v, reason %v; want one capacity attempt ending with ErrWaitTooLong", out.Attempts, out.Class, out.Reason)
	}
	if !near(out.RetryAt, start.Add(2*time.Second), 500*time.Millisecond) {
		t.Fatalf("RetryAt start+%v; want the decimal Retry-After of 2s", out.RetryAt.Sub(start))
	}
	if _, cools := lim.recorded(); len(cools) != 1 || !cools[0].until.Equal(out.RetryAt) {
		t.Fatalf("cooldowns %+v; want one until RetryAt (2s beats the 0.5s drain)", cools)
	}
}

func TestShopify429IsRetried(t *testing.T) {
	f := newFake(t, reply{status: 429, header: []string{"Retry-After", "0.01"}}, reply{status: 200, body: `{"orders":[]}`})
	c := client(t, f, presets.Shopify(), nil, nil)
	resp, _, out := call(t.Context(), t, c, "GET", shopifyOrders)
	if resp.StatusCode != 200 || out.Attempts != 2 {
		t.Fatalf("status %d after %d attempts; want 200 after 2", resp.StatusCode, out.Attempts)
	}
}

func TestShopify429WithoutRetryAfterWaitsOneSlot(t *testing.T) {
	f := newFake(t, reply{status: 429})
	lim := &recorder{}
	c := client(t, f, presets.Shopify(), lim, func(cfg *retrybudget.Config) { cfg.MaxAttempts = 1 })
	start := time.Now()
	_, _, out := call(t.Context(), t, c, "GET", shopifyOrders)
	if _, cools := lim.recorded(); len(cools) != 1 || !near(cools[0].until, start.Add(500*time.Millisecond), 100*time.Millisecond) {
		t.Fatalf("cooldowns %+v (outcome %+v); want one of about one slot's drain, 0.5s", cools, out)
	}
}
