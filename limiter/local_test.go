package limiter

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/fakeclock"
)

// t0 is an arbitrary fixed instant for fake clocks.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// fakeClock is the tests' hand-moved clock for the now seams, with a
// Sleep for the fair queue's waiting seam (see coalesce_test.go).
type fakeClock struct{ *fakeclock.Clock }

// newFakeClock returns a fakeClock that reads now until it is advanced.
func newFakeClock(now time.Time) *fakeClock { return &fakeClock{fakeclock.New(now)} }

func mustLocal(t *testing.T, cfg LocalConfig, now func() time.Time) *Local {
	t.Helper()
	if now == nil {
		now = func() time.Time { return t0 }
	}
	l, err := newLocal(cfg, now)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// step is one decision of a scripted scenario.
type step struct {
	at      time.Duration // since t0
	owner   string
	allowed bool
	retry   time.Duration // expected RetryAfter when refused
	reason  Reason
}

func runSteps(t *testing.T, l *Local, steps []step) {
	t.Helper()
	for i, s := range steps {
		d := allowAt(t, l, Request{Boundary: "b", Owner: s.owner}, t0.Add(s.at))
		if d.Allowed != s.allowed || d.RetryAfter != s.retry || d.Reason != s.reason {
			t.Fatalf("step %d at %v owner %q: got %+v, want allowed=%v retry=%v reason=%q",
				i, s.at, s.owner, d, s.allowed, s.retry, s.reason)
		}
	}
}

func TestLocalGCRA(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name   string
		limits []Limit
		share  float64
		steps  []step
	}{
		{
			name:   "burst then one per interval",
			limits: []Limit{{Rate: 10, Period: time.Second, Burst: 3}},
			steps: []step{
				{at: 0, allowed: true},
				{at: 0, allowed: true},
				{at: 0, allowed: true},
				{at: 0, retry: 100 * ms, reason: ReasonRate},
				{at: 40 * ms, retry: 60 * ms, reason: ReasonRate},
				{at: 100 * ms, allowed: true},
				{at: 100 * ms, retry: 100 * ms, reason: ReasonRate},
			},
		},
		{
			// The window edge: a request exactly one interval after the
			// last is allowed, one microsecond earlier is not.
			name:   "zero burst means one",
			limits: []Limit{PerSecond(5)},
			steps: []step{
				{at: 0, allowed: true},
				{at: 0, retry: 200 * ms, reason: ReasonRate},
				{at: 200*ms - time.Microsecond, retry: time.Microsecond, reason: ReasonRate},
				{at: 200 * ms, allowed: true},
				{at: 400 * ms, allowed: true},
			},
		},
		{
			// Two limits checked together: a refusal by one takes nothing
			// from the other.
			name:   "several limits are atomic",
			limits: []Limit{{Rate: 2, Burst: 2}, {Rate: 3, Period: time.Minute, Burst: 3}},
			steps: []step{
				{at: 0, allowed: true},
				{at: 0, allowed: true},
				{at: 0, retry: 500 * ms, reason: ReasonRate}, // per-second limit
				{at: time.Second, allowed: true},             // the minute limit's last token
				{at: time.Second, retry: 19 * time.Second, reason: ReasonRate},
				{at: 20 * time.Second, allowed: true},
				{at: 20 * time.Second, retry: 20 * time.Second, reason: ReasonRate},
			},
		},
		{
			name:   "owner share",
			limits: []Limit{{Rate: 10, Burst: 4}},
			share:  0.5, // each owner: 5/s, burst 2
			steps: []step{
				{at: 0, owner: "a", allowed: true},
				{at: 0, owner: "a", allowed: true},
				{at: 0, owner: "a", retry: 200 * ms, reason: ReasonOwner},
				{at: 0, owner: "b", allowed: true},
				{at: 0, owner: "b", allowed: true},
				{at: 0, owner: "c", retry: 100 * ms, reason: ReasonRate},
				{at: 0, retry: 100 * ms, reason: ReasonRate}, // no owner: the boundary alone
				{at: 100 * ms, owner: "c", allowed: true},
				{at: 200 * ms, owner: "a", allowed: true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := mustLocal(t, LocalConfig{Limits: tt.limits, OwnerShare: tt.share}, nil)
			runSteps(t, l, tt.steps)
		})
	}
}

// TestLocalWindowBound checks the documented bound on a random arrival
// pattern: no window of one Period holds more than Rate+Burst-1 allowed
// requests, and a busy boundary gets close to it.
func TestLocalWindowBound(t *testing.T) {
	for _, lim := range []Limit{PerSecond(7), {Rate: 50, Burst: 50}, {Rate: 3, Period: 10 * time.Second, Burst: 2}} {
		t.Run(lim.String(), func(t *testing.T) {
			l := mustLocal(t, LocalConfig{Limits: []Limit{lim}}, nil)
			rng := rand.New(rand.NewPCG(1, 2))
			var allowed []time.Duration
			at := time.Duration(0)
			period := lim.period()
			for at < 20*period {
				at += time.Duration(rng.Int64N(int64(period) / int64(lim.Rate) / 10))
				if allowAt(t, l, Request{Boundary: "b"}, t0.Add(at)).Allowed {
					allowed = append(allowed, at)
				}
			}
			bound := lim.Rate + lim.burst() - 1
			most := 0
			for i := range allowed {
				n := 0
				for j := i; j < len(allowed) && allowed[j]-allowed[i] < period; j++ {
					n++
				}
				most = max(most, n)
			}
			if most > bound {
				t.Fatalf("a window of %v held %d requests; bound %d", period, most, bound)
			}
			if want := 20 * lim.Rate * 9 / 10; len(allowed) < want {
				t.Fatalf("allowed %d over 20 periods, want at least %d", len(allowed), want)
			}
		})
	}
}

// TestLocalRetryAfterSuffices pins that waiting exactly RetryAfter is
// enough, despite the float arithmetic of x/time/rate, for rates whose
// interval is not a whole number of nanoseconds.
func TestLocalRetryAfterSuffices(t *testing.T) {
	for _, lim := range []Limit{PerSecond(3), PerMinute(7), PerHour(10_000), {Rate: 30, Burst: 7}} {
		t.Run(lim.String(), func(t *testing.T) {
			l := mustLocal(t, LocalConfig{Limits: []Limit{lim}}, nil)
			now := t0
			for i := 0; i < 200; i++ {
				d := allowAt(t, l, Request{Boundary: "b"}, now)
				if d.Allowed {
					continue
				}
				now = now.Add(d.RetryAfter)
				if d2 := allowAt(t, l, Request{Boundary: "b"}, now); !d2.Allowed {
					t.Fatalf("refused again after waiting RetryAfter %v: %+v", d.RetryAfter, d2)
				}
			}
		})
	}
}

func TestLocalCooldown(t *testing.T) {
	clock := newFakeClock(t0)
	l := mustLocal(t, LocalConfig{Limits: []Limit{PerSecond(100)}, MaxCooldown: time.Minute}, clock.Now)
	ctx := context.Background()

	if err := l.Cooldown(ctx, "b", t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	// A shorter cooldown does not shorten the pause.
	_ = l.Cooldown(ctx, "b", t0.Add(time.Second))
	d, _ := l.Allow(ctx, Request{Boundary: "b"})
	want := Decision{RetryAfter: 2 * time.Second, CooldownUntil: t0.Add(2 * time.Second), Reason: ReasonCooldown}
	if d != want {
		t.Fatalf("got %+v, want %+v", d, want)
	}
	if d, _ := l.Allow(ctx, Request{Boundary: "other"}); !d.Allowed {
		t.Fatalf("other boundary refused: %+v", d)
	}
	clock.Advance(2 * time.Second)
	if d, _ := l.Allow(ctx, Request{Boundary: "b"}); !d.Allowed {
		t.Fatalf("refused after the cooldown: %+v", d)
	}
	// A hostile Retry-After is capped at MaxCooldown.
	_ = l.Cooldown(ctx, "b", clock.Now().Add(1000*time.Hour))
	if d, _ := l.Allow(ctx, Request{Boundary: "b"}); d.RetryAfter != time.Minute {
		t.Fatalf("cooldown not capped: %+v", d)
	}
}

// TestLocalEvictsIdle checks that idle state is dropped, but only once
// dropping it changes nothing.
func TestLocalEvictsIdle(t *testing.T) {
	l := mustLocal(t, LocalConfig{Limits: []Limit{PerMinute(2).WithBurst(2)}, IdleAfter: time.Second}, nil)
	allowAt(t, l, Request{Boundary: "a"}, t0)
	allowAt(t, l, Request{Boundary: "a"}, t0)
	allowAt(t, l, Request{Boundary: "b"}, t0)
	if n := l.len(); n != 2 {
		t.Fatalf("%d entries, want 2", n)
	}
	// 30s later b has refilled (one token back) but a has not (needs 60s).
	allowAt(t, l, Request{Boundary: "c"}, t0.Add(30*time.Second))
	if n := l.len(); n != 2 {
		t.Fatalf("%d entries after 30s, want 2 (a and c)", n)
	}
	if d := allowAt(t, l, Request{Boundary: "a"}, t0.Add(30*time.Second)); !d.Allowed {
		t.Fatalf("a lost its refill: %+v", d)
	}
	if d := allowAt(t, l, Request{Boundary: "a"}, t0.Add(30*time.Second)); d.Allowed {
		t.Fatal("a was evicted while not full and got a fresh bucket")
	}
	allowAt(t, l, Request{Boundary: "c"}, t0.Add(2*time.Minute))
	if n := l.len(); n != 1 {
		t.Fatalf("%d entries after 2m, want 1 (c)", n)
	}
}

// TestLocalTimeGoesBackwards pins the guard against a clock stepping back:
// x/time/rate would count the same refill twice.
func TestLocalTimeGoesBackwards(t *testing.T) {
	l := mustLocal(t, LocalConfig{Limits: []Limit{PerSecond(1)}}, nil)
	r := Request{Boundary: "b"}
	allowAt(t, l, r, t0.Add(time.Second))
	allowAt(t, l, r, t0) // earlier: treated as t0+1s, refused
	if d := allowAt(t, l, r, t0.Add(1500*time.Millisecond)); d.Allowed {
		t.Fatal("allowed half an interval after the last request")
	}
}

func TestLocalConcurrent(t *testing.T) {
	l := mustLocal(t, LocalConfig{Limits: []Limit{{Rate: 1, Period: time.Hour, Burst: 100}}, OwnerShare: 0.5}, nil)
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Go(func() {
			for i := 0; i < 100; i++ {
				d, _ := l.Allow(context.Background(), Request{Boundary: "b", Owner: string(rune('a' + g%4))})
				if d.Allowed {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	// Four owners of 50 each, capped by the boundary's 100.
	if n := allowed.Load(); n != 100 {
		t.Fatalf("allowed %d, want exactly 100", n)
	}
}

func TestConfigErrors(t *testing.T) {
	bad := []LocalConfig{
		{Limits: []Limit{{Rate: 0}}},
		{Limits: []Limit{{Rate: -1}}},
		{Limits: []Limit{{Rate: 1, Burst: -1}}},
		{Limits: []Limit{{Rate: 1, Period: -time.Second}}},
		{Limits: []Limit{{Rate: 2_000_000}}},
		{OwnerShare: 1.5},
		{OwnerShare: -0.1},
	}
	for _, cfg := range bad {
		if _, err := NewLocal(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("NewLocal(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
	if _, err := NewLocal(LocalConfig{}); err != nil {
		t.Fatalf("zero config: %v", err)
	}
}

// allowAt decides r at now with l, failing t on an error.
func allowAt(t *testing.T, l *Local, r Request, now time.Time) Decision {
	t.Helper()
	d, err := l.AllowAt(r, now)
	if err != nil {
		t.Fatalf("AllowAt: %v", err)
	}
	return d
}
