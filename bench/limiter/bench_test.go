package limiterbench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/limiter"
)

// roundTrips counts the round trips a client makes.
type roundTrips = redistest.RoundTrips

// hotRate is high enough that every decision is allowed: the benchmark
// measures the cost of deciding, on one hot key.
const hotRate = 1_000_000

// BenchmarkDecisions measures decisions per second at concurrency 1, 16
// and 64 against one Redis, for a bare PING (the floor), redis_rate, the
// limiter, and the limiter prefetching 10 tokens per round trip. All use the
// same client, so the same pool and the same hook.
func BenchmarkDecisions(b *testing.B) {
	base := redistest.Client(b)
	o := base.Options()
	rdb := redis.NewClient(&redis.Options{
		Addr: o.Addr, Username: o.Username, Password: o.Password, DB: o.DB,
		ContextTimeoutEnabled: true, // bounds every call; the limiter then needs no goroutine
		PoolSize:              64,
	})
	b.Cleanup(func() { _ = rdb.Close() })
	rt := &roundTrips{}
	rdb.AddHook(rt)
	prefix := redistest.Prefix(b)

	rr := redis_rate.NewLimiter(rdb)
	rrLimit := redis_rate.PerSecond(hotRate)
	lim, err := limiter.NewRedis(rdb, limiter.RedisConfig{
		Limits:      []limiter.Limit{limiter.PerSecond(hotRate).WithBurst(hotRate)},
		BoundaryKey: redistest.BoundaryKey(),
		Prefix:      prefix + "plain:",
		Timeout:     time.Second, // measure deciding, not the fail-open path
	})
	if err != nil {
		b.Fatal(err)
	}
	prefetched, err := limiter.NewRedis(rdb, limiter.RedisConfig{
		Limits:      []limiter.Limit{limiter.PerSecond(hotRate).WithBurst(hotRate)},
		BoundaryKey: redistest.BoundaryKey(),
		Prefix:      prefix + "prefetch:",
		Timeout:     time.Second,
		Prefetch:    10,
	})
	if err != nil {
		b.Fatal(err)
	}
	req := limiter.Request{Boundary: "api.example.com#0123456789abcdef"}
	rrKey := prefix + "redis_rate:api.example.com#0123456789abcdef"

	contenders := []struct {
		name string
		op   func(ctx context.Context) error
	}{
		{"ping", func(ctx context.Context) error { return rdb.Ping(ctx).Err() }},
		{"redis_rate", func(ctx context.Context) error {
			res, err := rr.Allow(ctx, rrKey, rrLimit)
			if err == nil && res.Allowed != 1 {
				err = fmt.Errorf("refused: %+v", res)
			}
			return err
		}},
		{"limiter", func(ctx context.Context) error { return mustAllow(lim.Allow(ctx, req)) }},
		{"limiter_prefetch10", func(ctx context.Context) error { return mustAllow(prefetched.Allow(ctx, req)) }},
	}
	for _, c := range []int{1, 16, 64} {
		for _, ct := range contenders {
			b.Run(fmt.Sprintf("c=%d/%s", c, ct.name), func(b *testing.B) {
				// Warm up: load scripts and open connections outside the
				// measurement.
				for range c {
					if err := ct.op(context.Background()); err != nil {
						b.Fatal(err)
					}
				}
				runConcurrent(b, c, rt, ct.op)
			})
		}
	}
}

func mustAllow(d limiter.Decision, err error) error {
	if err == nil && (!d.Allowed || d.Fallback) {
		err = fmt.Errorf("refused or decided without Redis: %+v", d)
	}
	return err
}

// runConcurrent runs b.N operations on c goroutines and reports decisions
// per second and Redis round trips per decision.
func runConcurrent(b *testing.B, c int, rt *roundTrips, op func(context.Context) error) {
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	rt.N.Store(0)
	b.ResetTimer()
	start := time.Now()
	for range c {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := op(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "decisions/s")
	b.ReportMetric(float64(rt.N.Load())/float64(b.N), "roundtrips/op")
}
