package retrybudget

import (
	"context"
	"sync"
	"testing"
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

// The budget a Transport builds by default runs on the Transport's clock,
// not time.Now, so a fake Transport clock reaches it. Its floor of 10
// retries per second must refill on the Transport's clock, and so must a
// route's (which inherits the Transport's Budget: each subtest uses its own
// destination).
func TestDefaultBudgetRunsOnTheTransportClock(t *testing.T) {
	tr, fc := newFakeTransport(Config{Routes: []Route{{Host: "routed.example"}}})
	ctx := context.Background()
	for _, b := range []struct {
		name string
		tr   *policy
	}{{"transport", &tr.policy}, {"route", tr.routes[0].p}} {
		t.Run(b.name, func(t *testing.T) {
			budget := b.tr.cfg.Budget
			allowed := func() (n int) {
				for range 20 {
					if budget.Withdraw(ctx, "api-"+b.name).Allowed {
						n++
					}
				}
				return n
			}
			if n := allowed(); n != 10 {
				t.Fatalf("%d retries allowed at first; want the floor's 10", n)
			}
			// One second on the fake clock, none on the wall clock.
			_ = fc.Sleep(ctx, time.Second)
			if n := allowed(); n != 10 {
				t.Fatalf("%d retries allowed a fake second later; want the refilled floor's 10", n)
			}
		})
	}
}

func TestSpanNowIsTheClocksTimeOrTheMonotonicOne(t *testing.T) {
	fc := newFakeClock()
	if now := spanNow(fc); !now().Equal(fc.Now()) {
		t.Fatal("a test's clock is not the default Budget's time")
	}
	now := spanNow(realClock{})
	a := now()
	b := now()
	if b.Before(a) {
		t.Fatalf("time went back: %v then %v", a, b)
	}
	if d := time.Since(b); d < -time.Second || d > time.Second {
		t.Fatalf("the steady time is %v away from the wall clock", d)
	}
}
