package presets

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/limiter"
	"github.com/retrybudget/retrybudget/rateheader"
)

// ShopifyLeakRate is the rate, in requests per second, at which the
// Shopify preset assumes the REST Admin API bucket drains: the standard
// plan's 2 per second. Larger plans leak faster (4/s Advanced, 20/s
// Plus), so on those the pause after a full bucket is longer than needed,
// never shorter.
const ShopifyLeakRate = 2

// maxCallLimit bounds the bucket size and usage read from
// X-Shopify-Shop-Api-Call-Limit. The documented buckets hold tens to a few
// thousand requests; a larger figure is garbage.
const maxCallLimit = 1_000_000

// Shopify returns the policy for the Shopify Admin APIs, REST and GraphQL
// (*.myshopify.com/admin/api/).
//
// Sources (read 2026-12-03): https://shopify.dev/docs/api/usage/rate-limits,
// https://shopify.dev/docs/api/admin-rest/usage/rate-limits and
// https://shopify.dev/docs/api/admin-graphql#rate-limits.
//
//   - The REST Admin API is a leaky bucket per app and store: each request
//     adds one, the bucket drains at 2 requests per second on the
//     standard plan, and every response reports its fill in
//     X-Shopify-Shop-Api-Call-Limit as used/size ("39/40"). When used
//     reaches size, the next request would be refused, so PauseUntil is
//     now plus (used−size+1)/ShopifyLeakRate seconds: the time for one
//     slot to drain. ShopifyLeakRate is the standard plan's rate, our
//     conservative choice since the response does not say the plan.
//   - A 429 is a capacity answer; its Retry-After, which Shopify sends in
//     decimal seconds ("2.0"), is honoured (the DefaultClassifier
//     alone would refuse the decimal). Without one, RetryAt is one slot's
//     drain time.
//   - Key: the REST Admin API documents no idempotency key header, so
//     none is sent (OmitKey) and none is honoured: a POST that may have been applied is not
//     repeated (ErrUncertain).
//   - The GraphQL Admin API (admin/api/.../graphql.json) is a bucket of
//     query cost points per app and store, refilled at restoreRate points
//     per second. A throttled query is answered 200 with
//     errors[].extensions.code "THROTTLED" and the bucket in
//     extensions.cost.throttleStatus (maximumAvailable,
//     currentlyAvailable, restoreRate); the query did not run. It is a
//     capacity answer: RetryAt and PauseUntil are when the bucket holds
//     the query's requestedQueryCost again, (requestedQueryCost −
//     currentlyAvailable) / restoreRate seconds on (one point's time when
//     the cost is not given), at most a minute. The body is read for this
//     only on graphql.json answers, at most 16 KiB and 100ms of it, and
//     left in place for the caller.
//   - Three attempts, 500ms doubling up to 10s (our choice).
//   - Auxiliary: /admin/oauth/ (the access token exchange) carries no
//     Action.
//   - Boundary: the store's host and a hash of X-Shopify-Access-Token,
//     since the bucket is per app and store.
//   - ActionScope: the store's host, which names the store: one Action
//     sent to two stores is two actions (the ledger's fingerprint leaves
//     the host out).
func Shopify() retrybudget.Route {
	return retrybudget.Route{
		Name:       "shopify",
		Host:       "*.myshopify.com",
		PathPrefix: "/admin/api/",
		Auxiliary:  []string{"/admin/oauth/"},
		Config: retrybudget.Config{
			OmitKey:     true,
			MaxAttempts: 3,
			BaseDelay:   500 * time.Millisecond,
			MaxDelay:    10 * time.Second,
			Boundary:    limiter.ByHeader("X-Shopify-Access-Token"),
			ActionScope: hostScope,
			Classifier:  shopifyClassifier{},
		},
	}
}

// shopifyClassifier reads Shopify's call limit and decimal Retry-After.
type shopifyClassifier struct{}

// Classify implements retrybudget.Classifier.
func (shopifyClassifier) Classify(a *retrybudget.AttemptResult) retrybudget.Classification {
	cls := retrybudget.DefaultClassifier{}.Classify(a)
	resp := a.Response
	if resp == nil {
		return cls
	}
	now := a.Now
	if used, size, ok := parseCallLimit(resp.Header.Get("X-Shopify-Shop-Api-Call-Limit")); ok && used >= size {
		if until := now.Add(drainTime(used - size + 1)); until.After(cls.PauseUntil) {
			cls.PauseUntil = until
		}
	}
	if until, ok := shopifyThrottled(a.Request, resp, now); ok {
		cls.Class, cls.RetryAt = retrybudget.ClassCapacity, until
		cls.PauseUntil = later(cls.PauseUntil, until)
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		if at, ok := rateheader.ParseRetryAfter(resp.Header, now); ok {
			cls.RetryAt = at
		} else {
			cls.RetryAt = now.Add(drainTime(1))
		}
	}
	return cls
}

// maxThrottleWait bounds the wait read from a GraphQL throttle status: the
// documented buckets refill in seconds, so a longer figure is garbage.
const maxThrottleWait = time.Minute

// shopifyThrottled reads the answer resp to req, a GraphQL Admin API call: when its errors say
// THROTTLED, until is when the bucket holds the query's cost again (see
// Shopify) and ok is true.
func shopifyThrottled(req *http.Request, resp *http.Response, now time.Time) (until time.Time, ok bool) {
	if resp.StatusCode != http.StatusOK || req == nil || !strings.HasSuffix(req.URL.Path, "/graphql.json") {
		return time.Time{}, false
	}
	var body struct {
		Errors []struct {
			Extensions struct {
				Code string `json:"code"`
			} `json:"extensions"`
		} `json:"errors"`
		Extensions struct {
			Cost struct {
				RequestedQueryCost float64 `json:"requestedQueryCost"`
				ThrottleStatus     struct {
					CurrentlyAvailable float64 `json:"currentlyAvailable"`
					RestoreRate        float64 `json:"restoreRate"`
				} `json:"throttleStatus"`
			} `json:"cost"`
		} `json:"extensions"`
	}
	if !peekJSON(resp, &body) {
		return time.Time{}, false
	}
	throttled := false
	for _, e := range body.Errors {
		throttled = throttled || e.Extensions.Code == "THROTTLED"
	}
	if !throttled {
		return time.Time{}, false
	}
	cost, st := body.Extensions.Cost.RequestedQueryCost, body.Extensions.Cost.ThrottleStatus
	wait := maxThrottleWait
	if st.RestoreRate > 0 {
		need := max(cost-st.CurrentlyAvailable, 1)
		if secs := need / st.RestoreRate; secs < maxThrottleWait.Seconds() {
			wait = time.Duration(secs * float64(time.Second))
		}
	}
	return now.Add(wait), true
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// drainTime is how long the bucket takes to drain n requests at
// ShopifyLeakRate.
func drainTime(n int64) time.Duration {
	return time.Duration(n) * time.Second / ShopifyLeakRate
}

// parseCallLimit parses X-Shopify-Shop-Api-Call-Limit: "used/size", two
// non-negative decimal integers with a positive size, each at most
// maxCallLimit. ok is false for anything else.
func parseCallLimit(v string) (used, size int64, ok bool) {
	u, s, found := strings.Cut(strings.TrimSpace(v), "/")
	if !found {
		return 0, 0, false
	}
	used, okU := callCount(strings.TrimSpace(u))
	size, okS := callCount(strings.TrimSpace(s))
	if !okU || !okS || size == 0 {
		return 0, 0, false
	}
	return used, size, true
}

// callCount parses a decimal integer in [0, maxCallLimit] without a sign.
func callCount(s string) (int64, bool) {
	if s == "" || s[0] == '+' || s[0] == '-' {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n <= maxCallLimit
}
