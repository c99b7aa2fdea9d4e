// Package ctxsleep holds the one context-aware sleep that the Transport's
// clock and the limiter's fair queue both use.
package ctxsleep

import (
	"context"
	"time"
)

// Sleep waits for d or until ctx ends, and returns ctx.Err() in the latter
// case. A d of zero or less returns at once with ctx.Err().
func Sleep(ctx context.Context, d time.Duration) error {
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
