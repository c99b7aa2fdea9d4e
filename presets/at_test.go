package presets_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/budget"
)

// atFake points every Route of routes at the fake provider f with
// Route.At, shrinks their delays to milliseconds, turns the retry budget
// off, applies adjust (when set) to each Config, and returns a client whose
// Transport has them as its Routes. A request that matches none fails the
// test (see unrouted).
func atFake(t *testing.T, f *fake, routes []retrybudget.Route, adjust func(*retrybudget.Config)) *http.Client {
	t.Helper()
	rs := make([]retrybudget.Route, len(routes))
	for i, r := range routes {
		r = r.At(f.srv.URL)
		r.Config.BaseDelay = time.Millisecond
		r.Config.MaxDelay = 5 * time.Millisecond
		r.Config.Jitter = -1
		r.Config.MaxWait = 100 * time.Millisecond
		r.Config.Budget = budget.Unlimited{}
		if adjust != nil {
			adjust(&r.Config)
		}
		rs[i] = r
	}
	return &http.Client{Transport: retrybudget.New(retrybudget.Config{
		Base:       f.srv.Client().Transport,
		Classifier: unrouted{t},
		Routes:     rs,
	})}
}

// arrivals counts the requests the fake provider has received.
func (f *fake) arrivals() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.seen)
}

// do sends one request to path on the fake under ctx (with the Action it
// may hold) and returns its Outcome, from the response or the error.
func do(ctx context.Context, t *testing.T, c *http.Client, f *fake, method, path string, header ...string) retrybudget.Outcome {
	t.Helper()
	_, _, out := call(ctx, t, c, method, f.srv.URL+path, header...)
	return out
}
