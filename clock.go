package retrybudget

import (
	"context"
	"time"
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
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
