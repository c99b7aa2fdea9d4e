package limiter_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/limiter"
)

// A fleet shares one provider credential's limit through Redis, and the
// fair queue serves the tenants waiting on it round-robin, so one tenant's
// backlog does not starve another. Every process builds the same limiter:
// the same limits, weights and boundary key, a per-deployment secret read
// from where the service keeps its other secrets (here the environment).
// (Compiled only: it needs a Redis.)
func ExampleNewRedis() {
	rdb := redis.NewClient(&redis.Options{
		Addr:                  "redis.internal:6379",
		ContextTimeoutEnabled: true,
	})
	defer rdb.Close()
	lim, err := limiter.NewRedis(rdb, limiter.RedisConfig{
		Limits: []limiter.Limit{limiter.PerSecond(100)},
		// At least 16 bytes, the same on every process.
		BoundaryKey: []byte(os.Getenv("RETRYBUDGET_BOUNDARY_KEY")),
		Queue: &limiter.FairQueue{
			Weights: map[string]int{"acme": 2}, // acme gets two slots per round
		},
	})
	if err != nil {
		fmt.Println(err) // limiter.ErrNoBoundaryKey without the secret
		return
	}
	// Connect and load the scripts before serving, waiting up to 5s: the
	// first decision then takes one round trip, not four.
	startup, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := lim.Prepare(startup); err != nil {
		fmt.Println(err) // an *UnavailableError: Redis did not answer
		return
	}
	client := &http.Client{Transport: retrybudget.New(retrybudget.Config{
		Limiter:  lim,
		Boundary: limiter.ByCredential(), // one limit per API key, not per host
		MaxWait:  5 * time.Second,        // longer waits end the call with ErrRateLimited
	})}
	// The Action's tenant is the owner the queue is fair between.
	ctx := retrybudget.WithAction(context.Background(), retrybudget.Action{
		Tenant: "acme", Operation: "send", Key: "message-7",
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.example.com/v1/messages", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	req.Header.Set("Authorization", "Bearer "+os.Getenv("PROVIDER_API_KEY"))
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err) // e.g. rate limited, with when to come back
		return
	}
	defer resp.Body.Close()
	fmt.Println(resp.Status)
}
