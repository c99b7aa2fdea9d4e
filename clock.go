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
