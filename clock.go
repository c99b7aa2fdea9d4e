package retrybudget

import (
	"context"
	"time"

	"github.com/retrybudget/retrybudget/internal/ctxsleep"
)

// clock is the Transport's only view of time, so tests can replace it with
// a fake that never sleeps.
type clock interface {
	Now() time.Time
	// Sleep waits for d or until ctx ends, and returns ctx.Err() in the
	// latter case.
	Sleep(ctx context.Context, d time.Duration) error
}

// realClock is the wall clock.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	return ctxsleep.Sleep(ctx, d)
}

// spanNow returns the time source of the Budget a Transport builds by
// default, which only measures spans of time (its window, its floor): clk's
// own for a test's clock; for the real clock, the wall time at the start
// moved on by the monotonic clock. That is one reading of the system clock
// instead of time.Now's two (wall and monotonic), on every call's deposit,
// and steady when the wall clock is stepped.
func spanNow(clk clock) func() time.Time {
	if _, real := clk.(realClock); !real {
		return clk.Now
	}
	start := time.Now()
	return func() time.Time { return start.Add(time.Since(start)) }
}
