package retrybudget

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/limiter"
)

// scriptedLimiter answers Allow with its decisions in turn (the last
// repeats) and records every request and cooldown.
type scriptedLimiter struct {
	mu        sync.Mutex // guards all fields
	decisions []limiter.Decision
	err       error
	asked     []limiter.Request
	cooldowns []time.Time
	boundary  []string
}

func (s *scriptedLimiter) Allow(_ context.Context, r limiter.Request) (limiter.Decision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, r)
	if s.err != nil {
		return limiter.Decision{}, s.err
	}
	return s.decisions[min(len(s.asked), len(s.decisions))-1], nil
}

func (s *scriptedLimiter) Cooldown(_ context.Context, boundary string, until time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cooldowns = append(s.cooldowns, until)
	s.boundary = append(s.boundary, boundary)
	return nil
}

var allow = limiter.Decision{Allowed: true}

func TestLimiterWaitsBeforeEveryAttempt(t *testing.T) {
	p := newProvider(t, status(503), status(200))
	lim := &scriptedLimiter{decisions: []limiter.Decision{{RetryAfter: 2 * time.Second}, allow}}
	tr, fc := newFakeTransport(Config{Limiter: lim, Boundary: limiter.Fixed("acct-1"), Jitter: -1, BaseDelay: 100 * time.Millisecond})
	ctx := WithAction(context.Background(), Action{Tenant: "acme", Operation: "charge", Key: "o-1"})
	resp, err := send(ctx, t, tr, "POST", p.URL, "x")
	if err != nil {
		t.Fatal(err)
	}
	if o := finalOutcome(t, resp); o.Attempts != 2 || resp.StatusCode != 200 {
		t.Fatalf("attempts %d status %d; want 2, 200", o.Attempts, resp.StatusCode)
	}
	// Allow: refused, allowed (first attempt); allowed (retry).
	if len(lim.asked) != 3 || lim.asked[0].Owner != "acme" || lim.asked[0].Boundary != limiter.Fixed("acct-1")(nil) {
		t.Fatalf("limiter asked %+v; want 3 asks for the account with owner acme", lim.asked)
	}
	if s := fc.Sleeps(); len(s) != 2 || s[0] != 2*time.Second || s[1] != 100*time.Millisecond {
		t.Fatalf("sleeps %v; want [2s (limiter) 100ms (backoff)]", s)
	}
}

func TestLimiterWaitThatCannotFitGivesUpAtOnce(t *testing.T) {
	p := newProvider(t, status(200))
	lim := &scriptedLimiter{decisions: []limiter.Decision{{RetryAfter: 10 * time.Second}}}
	tr, fc := newFakeTransport(Config{Limiter: lim})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := fc.Now()
	_, err := send(ctx, t, tr, "GET", p.URL, "")
	var e *Error
	if !errors.Is(err, ErrRateLimited) || !errors.As(err, &e) || e.Class != ClassCapacity || e.Attempts != 0 {
		t.Fatalf("error %v; want a capacity *Error with ErrRateLimited and no attempt", err)
	}
	if e.RetryAt.Sub(start) < 10*time.Second {
		t.Fatalf("RetryAt %v after start; want at least 10s", e.RetryAt.Sub(start))
	}
	if len(fc.Sleeps()) != 0 || len(p.requests()) != 0 {
		t.Fatalf("slept %v, sent %d; want neither", fc.Sleeps(), len(p.requests()))
	}
}

func TestLimiterCooldownFollowsRetryAfter(t *testing.T) {
	p := newProvider(t, status(429, "Retry-After", "5"), status(200))
	lim := &scriptedLimiter{decisions: []limiter.Decision{allow}}
	tr, fc := newFakeTransport(Config{Limiter: lim, Boundary: limiter.Fixed("acct-1")})
	start := fc.Now()
	resp, err := send(context.Background(), t, tr, "GET", p.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	finalOutcome(t, resp)
	if len(lim.cooldowns) != 1 || lim.boundary[0] != limiter.Fixed("acct-1")(nil) {
		t.Fatalf("cooldowns %v on %v; want one for the account", lim.cooldowns, lim.boundary)
	}
	if d := lim.cooldowns[0].Sub(start); d < 4*time.Second || d > 6*time.Second {
		t.Fatalf("cooldown until start+%v; want about 5s", d)
	}
}

func TestLimiterFailureEndsTheCall(t *testing.T) {
	p := newProvider(t, status(200))
	cause := fmt.Errorf("redis down: %w", limiter.ErrUnavailable)
	tr, _ := newFakeTransport(Config{Limiter: &scriptedLimiter{err: cause}})
	_, err := send(context.Background(), t, tr, "POST", p.URL, "x")
	if !errors.Is(err, ErrLimiter) || !errors.Is(err, limiter.ErrUnavailable) {
		t.Fatalf("error %v; want ErrLimiter wrapping limiter.ErrUnavailable", err)
	}
	if len(p.requests()) != 0 {
		t.Fatal("a request was sent although the limiter could not decide")
	}
}

// A wait the limiter spent inside Allow (a fair queue's slot) reaches the
// Observer like any limiter wait; an Allow that answered at once reports
// nothing.
func TestQueueWaitInsideAllowIsReported(t *testing.T) {
	p := newProvider(t, status(200), status(200))
	lim := &scriptedLimiter{decisions: []limiter.Decision{{Allowed: true, Waited: 700 * time.Millisecond}, allow}}
	var waits []time.Duration
	tr, _ := newFakeTransport(Config{Limiter: lim, Observer: Observer{Limited: func(ev LimitEvent) { waits = append(waits, ev.Wait) }}})
	for range 2 {
		resp, err := send(context.Background(), t, tr, "GET", p.URL, "")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if len(waits) != 1 || waits[0] != 700*time.Millisecond {
		t.Fatalf("limiter waits reported %v; want [700ms]", waits)
	}
}
