package limiterbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/limiter"
)

// compareEnv turns TestCompare on; it runs for about a minute.
// LIMITER_COMPARE_ROUNDS and LIMITER_COMPARE_CONC change the number of
// rounds (15) and run one concurrency instead of 1, 16 and 64.
const compareEnv = "LIMITER_COMPARE"

// TestCompare is BenchmarkDecisions made robust to a shared, noisy
// machine: many short rounds, contenders in a fresh random order each
// round, and per concurrency the median throughput of each contender plus
// the median of the per-round ratio limiter/redis_rate (each ratio taken
// from runs a fraction of a second apart, so load from other processes
// mostly cancels out). The limiter runs with its default, coalesced
// decisions, and with MaxBatch 1 (one round trip per decision).
func TestCompare(t *testing.T) {
	if os.Getenv(compareEnv) == "" {
		t.Skipf("set %s=1 to run the interleaved comparison", compareEnv)
	}
	const slice = 300 * time.Millisecond
	rounds := 15
	if n, err := strconv.Atoi(os.Getenv("LIMITER_COMPARE_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	concurrency := []int{1, 16, 64}
	if c, err := strconv.Atoi(os.Getenv("LIMITER_COMPARE_CONC")); err == nil && c > 0 {
		concurrency = []int{c}
	}
	base := redistest.Client(t)
	o := base.Options()
	rdb := redis.NewClient(&redis.Options{
		Addr: o.Addr, Username: o.Username, Password: o.Password, DB: o.DB,
		ContextTimeoutEnabled: true,
		PoolSize:              64,
	})
	t.Cleanup(func() { _ = rdb.Close() })
	rt := &roundTrips{}
	rdb.AddHook(rt)
	prefix := redistest.Prefix(t)

	rr := redis_rate.NewLimiter(rdb)
	rrLimit := redis_rate.PerSecond(hotRate)
	newLim := func(name string, prefetch, batch int) *limiter.Redis {
		l, err := limiter.NewRedis(rdb, limiter.RedisConfig{
			Limits:      []limiter.Limit{limiter.PerSecond(hotRate).WithBurst(hotRate)},
			BoundaryKey: redistest.BoundaryKey(),
			Prefix:      prefix + name + ":",
			Timeout:     time.Second,
			Prefetch:    prefetch,
			MaxBatch:    batch,
		})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	// The default limiter coalesces; MaxBatch 1 is one round trip per
	// decision, as before coalescing.
	lim, single, prefetched := newLim("plain", 0, 0), newLim("single", 0, 1), newLim("prefetch", 10, 0)
	req := limiter.Request{Boundary: "api.example.com#0123456789abcdef"}
	rrKey := prefix + "redis_rate:api.example.com#0123456789abcdef"
	contenders := []struct {
		name string
		op   func(ctx context.Context) error
	}{
		{"ping", func(ctx context.Context) error { return rdb.Ping(ctx).Err() }},
		{"redis_rate", func(ctx context.Context) error { _, err := rr.Allow(ctx, rrKey, rrLimit); return err }},
		{"limiter", func(ctx context.Context) error { return mustAllow(lim.Allow(ctx, req)) }},
		{"limiter_single", func(ctx context.Context) error { return mustAllow(single.Allow(ctx, req)) }},
		{"limiter_prefetch10", func(ctx context.Context) error { return mustAllow(prefetched.Allow(ctx, req)) }},
	}
	for _, ct := range contenders {
		if err := ct.op(context.Background()); err != nil {
			t.Fatal(err)
		}
	}

	var report strings.Builder
	fmt.Fprintf(&report, "%d rounds of %v per contender, median decisions/s (round trips per decision):\n", rounds, slice)
	fmt.Fprintf(&report, "%-5s %16s %16s %18s %18s %18s %11s %11s\n", "conc", "PING", "redis_rate", "limiter", "limiter MaxBatch1", "limiter prefetch10", "limiter/rr", "batch1/rr")
	for _, c := range concurrency {
		rates := make(map[string][]float64)
		trips := make(map[string][]float64)
		var ratios, singleRatios []float64
		order := []int{0, 1, 2, 3, 4}
		for range rounds {
			rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			got := make(map[string]float64)
			for _, i := range order {
				ct := contenders[i]
				n, rts := timed(t, c, slice, rt, ct.op)
				got[ct.name] = n
				rates[ct.name] = append(rates[ct.name], n)
				trips[ct.name] = append(trips[ct.name], rts)
			}
			ratios = append(ratios, got["limiter"]/got["redis_rate"])
			singleRatios = append(singleRatios, got["limiter_single"]/got["redis_rate"])
		}
		cell := func(name string) string {
			return fmt.Sprintf("%8.0f (%.2f)", median(rates[name]), median(trips[name]))
		}
		fmt.Fprintf(&report, "%-5d %16s %16s %18s %18s %18s %11.2f %11.2f\n", c, cell("ping"), cell("redis_rate"), cell("limiter"), cell("limiter_single"), cell("limiter_prefetch10"), median(ratios), median(singleRatios))
	}
	t.Log("\n" + report.String())
}

// timed runs op on c goroutines for d and returns operations per second and
// round trips per operation.
func timed(t *testing.T, c int, d time.Duration, rt *roundTrips, op func(context.Context) error) (float64, float64) {
	ctx := context.Background()
	var ops atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	rt.N.Store(0)
	start := time.Now()
	for range c {
		wg.Go(func() {
			for !stop.Load() {
				if err := op(ctx); err != nil {
					t.Error(err)
					return
				}
				ops.Add(1)
			}
		})
	}
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	n := float64(ops.Load())
	return n / time.Since(start).Seconds(), float64(rt.N.Load()) / n
}

// median returns the median of xs: the mean of the two middle values when
// their number is even.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[n/2]
}
