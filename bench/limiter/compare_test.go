package limiterbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// compareEnv turns TestCompare on; it runs for about two minutes.
// LIMITER_COMPARE_ROUNDS and LIMITER_COMPARE_CONC change the number of
// rounds (15) and run one concurrency instead of 1, 16 and 64.
const compareEnv = "LIMITER_COMPARE"

// TestCompare is BenchmarkDecisions made robust to a shared, noisy
// machine: many short rounds, contenders in a fresh random order each
// round, and per concurrency the median throughput of each contender plus
// the median of the per-round ratio to redis_rate (each ratio taken from
// runs a fraction of a second apart, so load from other processes mostly
// cancels out).
//
// Beside throughput it prints what holds still however loaded the machine
// is: per decision, the Redis round trips the client sent, the µs Redis
// spent running them (INFO commandstats: calls and usec of the commands
// sent, summed, read before and after each run on a private server) and
// Redis's CPU time (INFO cpu, which also counts reading and answering the
// commands).
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
	r := newRig(t)
	contenders := r.contenders(t)
	for _, ct := range contenders {
		if err := ct.op(context.Background(), 0); err != nil {
			t.Fatal(err)
		}
	}
	names := make([]string, len(contenders))
	for i, ct := range contenders {
		names[i] = ct.name
	}
	const baseline = "redis_rate"

	type figures struct{ rate, trips, micros, cpu, ratio, microRatio []float64 }
	results := make(map[int]map[string]*figures)
	for _, c := range concurrency {
		res := make(map[string]*figures)
		for _, n := range names {
			res[n] = &figures{}
		}
		for range rounds {
			got := make(map[string]run)
			for _, i := range rand.Perm(len(contenders)) {
				ct := contenders[i]
				deadline := time.Now().Add(slice)
				var failed atomic.Bool
				m := r.measure(t, c, func(ctx context.Context, w int) bool {
					if failed.Load() || time.Now().After(deadline) {
						return false
					}
					if err := ct.op(ctx, w); err != nil {
						t.Error(err)
						failed.Store(true)
						return false
					}
					return true
				}, nil)
				got[ct.name] = m
				f := res[ct.name]
				f.rate = append(f.rate, m.perSecond())
				f.trips = append(f.trips, m.roundTrips())
				f.micros = append(f.micros, m.redisMicros())
				f.cpu = append(f.cpu, m.redisCPUMicros())
			}
			for _, n := range names {
				f := res[n]
				f.ratio = append(f.ratio, got[n].perSecond()/got[baseline].perSecond())
				f.microRatio = append(f.microRatio, got[n].redisMicros()/got[baseline].redisMicros())
			}
		}
		results[c] = res
	}

	var b strings.Builder
	fmt.Fprintf(&b, "%d rounds of %v per contender and concurrency, contenders in a fresh random order each round; medians.\n\n", rounds, slice)
	b.WriteString("Throughput (noisy on a shared machine): decisions/s (round trips per decision), and the median of the per-round ratio to redis_rate:\n\n")
	fmt.Fprintf(&b, "| conc |")
	for _, n := range names {
		fmt.Fprintf(&b, " %s |", n)
	}
	for _, n := range names[2:] {
		fmt.Fprintf(&b, " %s/rr |", n)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(names)+len(names)-2) + "\n")
	for _, c := range concurrency {
		fmt.Fprintf(&b, "| %d |", c)
		for _, n := range names {
			f := results[c][n]
			fmt.Fprintf(&b, " %.0f (%.3f) |", median(f.rate), median(f.trips))
		}
		for _, n := range names[2:] {
			fmt.Fprintf(&b, " %.2f× |", median(results[c][n].ratio))
		}
		b.WriteString("\n")
	}
	b.WriteString("\nRedis per decision (counts that hold still): round trips; µs running the commands sent (INFO commandstats); CPU µs (INFO cpu); µs as a fraction of redis_rate's, median of per-round ratios:\n\n")
	b.WriteString("| conc | contender | round trips | Redis µs (commandstats) | Redis CPU µs | µs / redis_rate's |\n|---|---|---|---|---|---|\n")
	for _, c := range concurrency {
		for _, n := range names {
			f := results[c][n]
			fmt.Fprintf(&b, "| %d | %s | %.3f | %.2f | %.2f | %.3f |\n", c, n, median(f.trips), median(f.micros), median(f.cpu), median(f.microRatio))
		}
	}
	t.Log("\n" + b.String())
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
