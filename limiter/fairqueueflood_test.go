package limiter

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/ctxsleep"
	"github.com/retrybudget/retrybudget/internal/redistest"
)

// TestFairQueueShareUnderFlood: one process, one 50/s boundary with the
// fair queue; owner F keeps 4,000 requests in flight and owner S two
// request loops. S still gets about half the grants: the coalescer puts
// S's waiting request into the next batch instead of behind F's 4,000.
func TestFairQueueShareUnderFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 4,000 request loops for seconds")
	}
	// 50 slots a second: S's loops come back within a slot's 20ms on a
	// loaded machine, which a fair share needs of any owner.
	const flood, small, rate = 4000, 2, 50
	l := newTestRedis(t, redistest.Client(t), redistest.Prefix(t), RedisConfig{
		Limits: []Limit{PerSecond(rate)},
		Queue:  &FairQueue{},
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	warm, end := start.Add(time.Second), start.Add(4*time.Second)
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
	if share < 0.45 || share > 0.55 {
		t.Errorf("S got %.1f%% of the grants, want 45-55%%", 100*share)
	}
}
