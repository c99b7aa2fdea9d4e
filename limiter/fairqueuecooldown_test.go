package limiter

import (
	"context"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/redistest"
)

// TestFairQueueSlotWaitsOutCooldown: a request sleeping to its slot when
// the boundary's cooldown begins is refused for the cooldown when it
// wakes, instead of being sent inside the pause: for a cooldown set by
// this process, and for one another process set, heard from Redis by
// another request of this process.
func TestFairQueueSlotWaitsOutCooldown(t *testing.T) {
	rdb := redistest.Client(t)
	for _, tc := range []struct {
		name  string
		pause func(t *testing.T, l, other *Redis)
	}{
		{"set here", func(t *testing.T, l, _ *Redis) {
			if err := l.Cooldown(context.Background(), "b", l.now().Add(3*time.Second)); err != nil {
				t.Error(err)
			}
		}},
		{"set by another process", func(t *testing.T, l, other *Redis) {
			if err := other.Cooldown(context.Background(), "b", time.Now().Add(3*time.Second)); err != nil {
				t.Error(err)
			}
			// Another request of this process asks, and is refused for it.
			if d, err := l.Allow(context.Background(), Request{Boundary: "b", Owner: "C"}); err != nil || d.Reason != ReasonCooldown {
				t.Errorf("request during the fleet's cooldown: %+v, %v", d, err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			clk := newRealFakeClock()
			cfg := RedisConfig{Limits: []Limit{PerSecond(10)}, Queue: &FairQueue{}}
			l := newTestRedis(t, rdb, prefix, cfg)
			l.now, l.scriptNow = clk.Now, clk.Now
			other := newTestRedis(t, rdb, prefix, cfg)

			if d := allow(t, l, Request{Boundary: "b", Owner: "A"}); !d.Allowed {
				t.Fatalf("first request: %+v", d)
			}
			slept := 0
			l.batch.sleep = func(ctx context.Context, d time.Duration) error {
				if slept++; slept == 1 {
					tc.pause(t, l, other)
				}
				return clk.Sleep(ctx, d)
			}
			// B's slot is 100ms ahead; the cooldown begins while it sleeps.
			d := allow(t, l, Request{Boundary: "b", Owner: "B"})
			if slept == 0 {
				t.Fatal("B did not wait for a slot")
			}
			if d.Allowed || d.Reason != ReasonCooldown || d.RetryAfter <= 0 {
				t.Fatalf("B after sleeping into the cooldown: %+v, want refused for the cooldown", d)
			}
		})
	}
}
