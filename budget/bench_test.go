package budget_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/budget"
	"github.com/retrybudget/retrybudget/internal/benchtest"
	"github.com/retrybudget/retrybudget/internal/redistest"
)

// benchClient returns a client for the test Redis with
// ContextTimeoutEnabled set as given.
func benchClient(b *testing.B, ctxTimeouts bool) *redis.Client {
	// A fresh Options: a copied one would share the original client's
	// internal state.
	src := redistest.Client(b).Options()
	rdb := redis.NewClient(&redis.Options{
		Addr:                  src.Addr,
		Username:              src.Username,
		Password:              src.Password,
		DB:                    src.DB,
		TLSConfig:             src.TLSConfig,
		ContextTimeoutEnabled: ctxTimeouts,
	})
	b.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// mustRedis is budget.NewRedis, failing b on an error.
func mustRedis(b testing.TB, rdb redis.UniversalClient, cfg budget.RedisConfig) *budget.Redis {
	b.Helper()
	if cfg.DestinationKey == nil {
		cfg.DestinationKey = []byte("budget-bench-destination-key-1")
	}
	r, err := budget.NewRedis(rdb, cfg)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// benchBudgets are the budgets compared: the process-local one, the Redis
// one with a client that honours deadlines (recommended) and with a
// default client (each round trip then waits in a goroutine), and a Redis
// budget while Redis is down (nothing listens: the fail-open fallback).
func benchBudgets(b *testing.B) []struct {
	name string
	new  func(b *testing.B) budget.Budget
} {
	redisBudget := func(ctxTimeouts bool) func(b *testing.B) budget.Budget {
		return func(b *testing.B) budget.Budget {
			return mustRedis(b, benchClient(b, ctxTimeouts), budget.RedisConfig{Prefix: redistest.Prefix(b), Timeout: 5 * time.Second})
		}
	}
	return []struct {
		name string
		new  func(b *testing.B) budget.Budget
	}{
		{"local", func(*testing.B) budget.Budget { return budget.NewLocal(budget.Config{}) }},
		{"redis", redisBudget(true)},
		{"redis-detached", redisBudget(false)},
		{"redis-down", func(b *testing.B) budget.Budget {
			rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
			b.Cleanup(func() { _ = rdb.Close() })
			return mustRedis(b, rdb, budget.RedisConfig{})
		}},
	}
}

// BenchmarkDecision is the cost of one retry decision (Withdraw): for
// Redis, one round trip running the script. The budget is funded with a
// window's deposits first; most decisions are then refusals, which cost
// the same round trip. Run it with the root package's BenchmarkSuccessPath
// (go test -bench . . ./budget) to put it next to the cost of a whole call.
func BenchmarkDecision(b *testing.B) {
	ctx := context.Background()
	for _, bb := range benchBudgets(b) {
		b.Run(bb.name, func(b *testing.B) {
			bud := bb.new(b)
			for range 1000 {
				bud.Deposit(ctx, "api.example.com")
			}
			b.ReportAllocs()
			for b.Loop() {
				bud.Withdraw(ctx, "api.example.com")
			}
		})
	}
}

// BenchmarkDeposit is the cost a first attempt pays: counted in the
// process, with one round trip per destination per FlushInterval.
func BenchmarkDeposit(b *testing.B) {
	ctx := context.Background()
	for _, bb := range benchBudgets(b) {
		b.Run(bb.name, func(b *testing.B) {
			bud := bb.new(b)
			b.ReportAllocs()
			for b.Loop() {
				bud.Deposit(ctx, "api.example.com")
			}
		})
	}
}

// BenchmarkSuccessPath is a successful GET on loopback through the
// Transport with each budget: the first attempt deposits and nothing is
// withdrawn, so the Redis budget should cost about what the local one does.
func BenchmarkSuccessPath(b *testing.B) {
	var transports []benchtest.Transport
	for _, bb := range benchBudgets(b) {
		transports = append(transports, benchtest.Transport{Name: bb.name, New: func(b *testing.B, base http.RoundTripper) http.RoundTripper {
			return retrybudget.New(retrybudget.Config{Base: base, Budget: bb.new(b)})
		}})
	}
	benchtest.SuccessPath(b, transports...)
}
