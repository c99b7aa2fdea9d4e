package limiter

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/ctxsleep"
	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/internal/testenv"
)

// TestFairQueueShareUnderFlood: one process, one 50/s boundary with the
// fair queue; owner F keeps 400 requests in flight and owner S two request
// loops. S is not starved: the coalescer puts S's waiting request into the
// next batch instead of behind F's 400, so S gets at least a quarter of
// the grants (in arrival order it would get 2 in 402) on a loaded machine.
// The figure, with RETRYBUDGET_FIGURES=1: F keeps 4,000 in flight and S
// gets 45-55% of the grants of ten seconds (4,000 race-instrumented loops
// are themselves a load a busy two-core machine cannot carry at 50 slots a
// second).
func TestFairQueueShareUnderFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 4,000 request loops for seconds")
	}
	// 50 slots a second: S's loops come back within a slot's 20ms on a
	// loaded machine, which a fair share needs of any owner.
	const small, rate = 2, 50
	flood, measure := 400, 3*time.Second
	if testenv.Figures() {
		// 500 grants measured: a share's own noise (binomial) is then
		// about 2 points, not the 4 of 150.
		flood, measure = 4000, 10*time.Second
	}
	l := newTestRedis(t, redistest.Client(t), redistest.Prefix(t), RedisConfig{
		Limits: []Limit{PerSecond(rate)},
		Queue:  &FairQueue{},
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	warm := start.Add(time.Second)
	end := warm.Add(measure)
	var granted [2]atomic.Int64 // F, S
	var wg sync.WaitGroup
	loop := func(owner string, n *atomic.Int64) {
		defer wg.Done()
		r := Request{Boundary: "b", Owner: owner}
		for ctx.Err() == nil {
			d, err := l.Allow(ctx, r)
			if err != nil {
				return
			}
			if now := time.Now(); d.Allowed && now.After(warm) && now.Before(end) {
				n.Add(1)
			} else if !d.Allowed {
				// Refused with a place past its wait: come back then.
				_ = ctxsleep.Sleep(ctx, d.RetryAfter)
			}
		}
	}
	wg.Add(flood + small)
	for range flood {
		go loop("F", &granted[0])
	}
	for range small {
		go loop("S", &granted[1])
	}
	_ = ctxsleep.Sleep(ctx, time.Until(end))
	cancel()
	wg.Wait()
	f, s := granted[0].Load(), granted[1].Load()
	share := float64(s) / float64(f+s)
	t.Logf("F (%d in flight) %d grants, S (%d loops) %d: S's share %.1f%%, %.0f grants/s of %d", flood, f, small, s, 100*share, float64(f+s)/end.Sub(warm).Seconds(), rate)
	if share < 0.25 {
		t.Errorf("S got %.1f%% of the grants, want at least 25%%: the flood starves it", 100*share)
	}
	if testenv.Figures() && (share < 0.45 || share > 0.55) {
		t.Errorf("S got %.1f%% of the grants, want 45-55%% (%s=1)", 100*share, testenv.FiguresEnv)
	}
}
