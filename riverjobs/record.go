package riverjobs

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/retrybudget/retrybudget"
)

// run is what the provider calls of one job run told: the Outcome the run
// is decided on, and how many calls and attempts there were.
type run struct {
	mu       sync.Mutex // guards all below
	calls    int
	attempts int
	last     retrybudget.Outcome
	held     *retrybudget.Outcome // the first call whose Next is StepHold
}

// add records the Outcome of one call.
func (r *run) add(o retrybudget.Outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	r.attempts += o.Attempts
	r.last = o
	if r.held == nil && holds(o) {
		r.held = &o
	}
}

// snapshot returns the Outcome the run is decided on, whether there was
// one, and the call and attempt counts. That Outcome is the first that
// holds, if any call's does, else the last, as Captured.Next reads an SDK's
// calls: a call that may have been applied and cannot be repeated holds the
// job however the calls after it ended (an SDK's re-send that was refused,
// a later call of the same run).
func (r *run) snapshot() (o retrybudget.Outcome, ok bool, calls, attempts int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o = r.last
	if r.held != nil {
		o = *r.held
	}
	return o, r.calls > 0, r.calls, r.attempts
}

type runCtxKey struct{}

func withRun(ctx context.Context, r *run) context.Context {
	return context.WithValue(ctx, runCtxKey{}, r)
}

func runFrom(ctx context.Context) *run {
	r, _ := ctx.Value(runCtxKey{}).(*run)
	return r
}

// Record returns a RoundTripper that sends through next, a
// *retrybudget.Transport or a chain ending in one, and tells the
// Middleware the Outcome of every call a job makes. With it, the Middleware
// knows why a call gave up even when the worker turned the returned
// response into an error of its own, and writes the attempts of a
// successful job into its metadata. Requests made outside a job pass
// through untouched.
func Record(next http.RoundTripper) http.RoundTripper {
	return recorder{next: next}
}

type recorder struct{ next http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (rec recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rec.next.RoundTrip(req)
	r := runFrom(req.Context())
	if r == nil {
		return resp, err
	}
	var rbErr *retrybudget.Error
	switch {
	case errors.As(err, &rbErr):
		r.add(rbErr.Outcome)
	case err == nil:
		if o, ok := retrybudget.OutcomeOf(resp); ok {
			r.add(o)
		}
	}
	return resp, err
}

// CloseIdleConnections closes next's idle connections when it can.
func (rec recorder) CloseIdleConnections() {
	if c, ok := rec.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
