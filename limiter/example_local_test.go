package limiter_test

import (
	"context"
	"fmt"
	"time"

	"github.com/retrybudget/retrybudget/limiter"
)

// A provider allows 2 requests per second with bursts of 2, and at most
// 1,000 in any hour. Both limits are checked together.
func ExampleLocal() {
	lim, err := limiter.NewLocal(limiter.LocalConfig{
		Limits: []limiter.Limit{
			limiter.PerSecond(2).WithBurst(2),
			limiter.Window(1000, time.Hour, 200),
		},
	})
	if err != nil {
		panic(err)
	}
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	r := limiter.Request{Boundary: "api.example.com#acct"}
	for i := 0; i < 3; i++ {
		d, err := lim.AllowAt(r, now)
		if err != nil {
			panic(err)
		}
		fmt.Printf("allowed=%v retry_after=%v reason=%q\n", d.Allowed, d.RetryAfter, d.Reason)
	}
	// Output:
	// allowed=true retry_after=0s reason=""
	// allowed=true retry_after=0s reason=""
	// allowed=false retry_after=500ms reason="rate"
}

// After a 429 with Retry-After, the Transport pauses the boundary.
func ExampleLocal_cooldown() {
	lim, _ := limiter.NewLocal(limiter.LocalConfig{})
	boundary := "api.example.com#acct"
	_ = lim.Cooldown(context.Background(), boundary, time.Now().Add(30*time.Second))
	d, _ := lim.Allow(context.Background(), limiter.Request{Boundary: boundary})
	fmt.Println(d.Allowed, d.Reason, d.RetryAfter > 29*time.Second)
	// Output:
	// false cooldown true
}

// Each tenant may use at most half of the boundary, so one tenant's
// backlog leaves room for the others.
func ExampleLocalConfig_ownerShare() {
	lim, _ := limiter.NewLocal(limiter.LocalConfig{
		Limits:     []limiter.Limit{limiter.PerSecond(10).WithBurst(4)},
		OwnerShare: 0.5,
	})
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, owner := range []string{"busy", "busy", "busy", "quiet"} {
		d, err := lim.AllowAt(limiter.Request{Boundary: "b", Owner: owner}, now)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s allowed=%v reason=%q\n", owner, d.Allowed, d.Reason)
	}
	// Output:
	// busy allowed=true reason=""
	// busy allowed=true reason=""
	// busy allowed=false reason="owner"
	// quiet allowed=true reason=""
}
