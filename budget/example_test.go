package budget_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/budget"
)

// A fleet's processes each build the same budget on the same Redis and
// prefix, and share one retry budget per destination. (Compiled only: it
// needs a Redis.)
func ExampleNewRedis() {
	rdb := redis.NewClient(&redis.Options{
		Addr: "redis.internal:6379",
		// Lets each round trip end at the budget's Timeout on the socket
		// itself, without a goroutine to wait for it.
		ContextTimeoutEnabled: true,
	})
	defer rdb.Close()
	b, err := budget.NewRedis(rdb, budget.RedisConfig{
		// A per-deployment secret, from the environment, never the code.
		DestinationKey: []byte(os.Getenv("RETRYBUDGET_DESTINATION_KEY")),
		Prefix:         "payments:budget:",
		Timeout:        30 * time.Millisecond,
		OnUnavailable:  budget.FailOpen,
		Logger:         slog.New(slog.NewTextHandler(os.Stderr, nil)),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	client := &http.Client{Transport: retrybudget.New(retrybudget.Config{Budget: b})}
	resp, err := client.Get("https://api.example.com/v1/balance")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	fmt.Println(resp.Status)
}

// When Redis cannot be reached (here nothing listens on its port), each
// decision follows the fail mode and says it is a fallback. Failing open,
// the local rule decides from this process's own first attempts: 10% of
// 100. Failing closed, no retry goes out.
func ExampleFailMode() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer rdb.Close()
	for _, mode := range []budget.FailMode{budget.FailOpen, budget.FailClosed} {
		b, err := budget.NewRedis(rdb, budget.RedisConfig{
			Config:         budget.Config{MinRetriesPerSec: -1}, // no floor
			OnUnavailable:  mode,
			DestinationKey: []byte("example-destination-key-0123"),
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		for range 100 {
			b.Deposit(ctx, "api.example.com")
		}
		allowed := 0
		var d budget.Decision
		for range 20 {
			if d = b.Withdraw(ctx, "api.example.com"); d.Allowed {
				allowed++
			}
		}
		fmt.Printf("%s: %d of 20 retries allowed, fallback=%v\n", mode, allowed, d.Fallback)
	}
	// Output:
	// fail-open: 10 of 20 retries allowed, fallback=true
	// fail-closed: 0 of 20 retries allowed, fallback=true
}

// An Overload learns from how attempts to a destination end. Twenty
// attempts that each waited 200ms and ran out of time make a call that may
// wait 200ms likely refused; a call that may wait 2s, longer than any that
// ran out, is not; a second later the memory is gone.
func ExampleOverload() {
	o := budget.NewOverload(budget.OverloadConfig{})
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for range 20 {
		o.Record("api.example.com", 200*time.Millisecond, true, now)
	}
	fmt.Printf("200ms: %.2f\n", o.RefuseProbability("api.example.com", 200*time.Millisecond, now))
	fmt.Printf("2s: %.2f\n", o.RefuseProbability("api.example.com", 2*time.Second, now))
	fmt.Printf("a second later: %.2f, quiet %v\n",
		o.RefuseProbability("api.example.com", 200*time.Millisecond, now.Add(1100*time.Millisecond)), o.Quiet())
	// Output:
	// 200ms: 0.81
	// 2s: 0.00
	// a second later: 0.00, quiet true
}
