package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/redis/go-redis/v9"
	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/ledger"
)

// Every process of a fleet builds the same Redis ledger: the same Redis,
// prefix and fingerprint key. The key is a per-deployment secret, read from
// where the service keeps its other secrets (here the environment), never
// from Redis. (Compiled only: it needs a Redis.)
func ExampleNewRedis() {
	rdb := redis.NewClient(&redis.Options{
		Addr:                  "redis.internal:6379",
		ContextTimeoutEnabled: true,
	})
	defer rdb.Close()
	store, err := ledger.NewRedis(rdb, ledger.RedisConfig{
		Config: ledger.Config{
			// At least 16 bytes; to rotate, put the new key first.
			FingerprintKeys: ledger.FingerprintKeys{[]byte(os.Getenv("RETRYBUDGET_FINGERPRINT_KEY"))},
		},
		Prefix: "payments:ledger:",
	})
	if errors.Is(err, ledger.ErrNoFingerprintKey) {
		fmt.Println("set RETRYBUDGET_FINGERPRINT_KEY")
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	client := &http.Client{Transport: retrybudget.New(retrybudget.Config{
		Ledger: retrybudget.LedgerConfig{Store: store},
	})}
	// A charge sent twice, by a retry or by a worker that restarted, is
	// sent once: the second call replays the recorded answer.
	ctx := retrybudget.WithAction(context.Background(), retrybudget.Action{
		Tenant: "acme", Operation: "charge", Key: "order-1042",
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.example.com/v1/charges", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	out, _ := retrybudget.OutcomeOf(resp)
	fmt.Println(resp.Status, out.Replayed)
}
