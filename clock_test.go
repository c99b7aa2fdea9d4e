package retrybudget

import (
	"context"
	"sync"
	"time"
)

// fakeClock is a clock whose Sleep returns at once and advances Now by the
// requested duration, recording every sleep.
type fakeClock struct {
	mu     sync.Mutex // guards now and sleeps
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Now()} }

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	f.sleeps = append(f.sleeps, d)
	return nil
}

func (f *fakeClock) Sleeps() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.sleeps...)
}

// newFakeTransport returns a Transport whose waits go through a fake clock.
// The Transport, its routes and its default Budget all run on the fake
// clock.
func newFakeTransport(cfg Config) (*Transport, *fakeClock) {
	fc := newFakeClock()
	return newTransport(cfg, fc), fc
}
