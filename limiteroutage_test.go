package retrybudget

import (
	"context"
	"errors"
	"testing"

	"github.com/retrybudget/retrybudget/limiter"
)

// A limiter that cannot reach its store and fails closed ends the call with
// ErrLimiter, also when the store's error is a timeout: a timed-out Redis is
// an outage, not a rate limit, and must not read as ErrRateLimited.
func TestUnavailableLimiterIsErrLimiterEvenOnATimeout(t *testing.T) {
	p := newProvider(t, status(200))
	outage := &limiter.UnavailableError{Op: "allow", Err: context.DeadlineExceeded}
	tr, _ := newFakeTransport(Config{Limiter: &scriptedLimiter{err: outage}})
	_, err := send(context.Background(), t, tr, "POST", p.URL, "x")
	var e *Error
	if !errors.As(err, &e) || e.Reason != ErrLimiter || !errors.Is(err, limiter.ErrUnavailable) || errors.Is(err, ErrRateLimited) {
		t.Fatalf("error %v; want ErrLimiter wrapping limiter.ErrUnavailable, not ErrRateLimited", err)
	}
	if n := len(p.requests()); n != 0 {
		t.Fatalf("%d arrivals while the limiter could not decide, want 0", n)
	}
}
