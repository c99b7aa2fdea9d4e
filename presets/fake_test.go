package presets_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/budget"
	"github.com/retrybudget/retrybudget/limiter"
)

// reply is one canned answer of a fake provider.
type reply struct {
	status int
	header []string // name, value pairs
	body   string
}

// seen is what the fake provider saw of one request.
type seen struct {
	method string
	host   string
	path   string
	header http.Header
}

// fake is an httptest provider that answers with its replies in turn (the
// last one repeats) and records every request.
type fake struct {
	srv *httptest.Server

	mu      sync.Mutex // guards replies and seen
	replies []reply
	seen    []seen
}

// newFake starts a fake provider, closed when the test ends.
func newFake(t *testing.T, replies ...reply) *fake {
	t.Helper()
	f := &fake{replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	f.mu.Lock()
	f.seen = append(f.seen, seen{method: r.Method, host: r.Host, path: r.URL.Path, header: r.Header.Clone()})
	rep := f.replies[min(len(f.seen), len(f.replies))-1]
	f.mu.Unlock()
	for i := 0; i+1 < len(rep.header); i += 2 {
		w.Header().Add(rep.header[i], rep.header[i+1])
	}
	w.WriteHeader(rep.status)
	io.WriteString(w, rep.body)
}

// requests returns what the fake saw so far.
func (f *fake) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.seen...)
}

// redirect is the Transport's Base in the tests: it sends each request,
// addressed to the provider's real host, to the fake instead, keeping the
// Host header so the fake sees which host was meant.
type redirect struct {
	to   *url.URL
	base http.RoundTripper
}

func (r redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host = r.to.Scheme, r.to.Host
	out.Host = req.URL.Host
	return r.base.RoundTrip(out)
}

// recorder is a limiter.Limiter that allows every request and records the
// cooldowns the Transport asks for.
type recorder struct {
	mu        sync.Mutex // guards the fields below
	boundary  []string   // boundaries of the Allow calls
	cooldowns []cooldown
}

// cooldown is one recorded Cooldown call.
type cooldown struct {
	boundary string
	until    time.Time
}

func (r *recorder) Allow(_ context.Context, req limiter.Request) (limiter.Decision, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.boundary = append(r.boundary, req.Boundary)
	return limiter.Decision{Allowed: true}, nil
}

func (r *recorder) Cooldown(_ context.Context, boundary string, until time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cooldowns = append(r.cooldowns, cooldown{boundary, until})
	return nil
}

func (r *recorder) recorded() ([]string, []cooldown) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.boundary...), append([]cooldown(nil), r.cooldowns...)
}

// unrouted fails the test when a request reaches the Transport's own
// policy: every request of these tests must match the preset's Route.
type unrouted struct{ t *testing.T }

func (u unrouted) Classify(a *retrybudget.AttemptResult) retrybudget.Classification {
	u.t.Errorf("%s %s did not match the preset's route", a.Request.Method, a.Request.URL)
	return retrybudget.DefaultClassifier{}.Classify(a)
}

// client returns an http.Client whose Transport uses route, with delays
// shrunk to milliseconds so no test sleeps for long, the retry budget off
// and lim as the limiter. adjust, when set, changes the route's Config
// further.
func client(t *testing.T, f *fake, route retrybudget.Route, lim *recorder, adjust func(*retrybudget.Config)) *http.Client {
	t.Helper()
	to, _ := url.Parse(f.srv.URL)
	route.Config.BaseDelay = time.Millisecond
	route.Config.MaxDelay = 5 * time.Millisecond
	route.Config.Jitter = -1
	route.Config.MaxWait = 100 * time.Millisecond
	route.Config.Budget = budget.Unlimited{}
	if lim != nil {
		route.Config.Limiter = lim
	}
	if adjust != nil {
		adjust(&route.Config)
	}
	return &http.Client{Transport: retrybudget.New(retrybudget.Config{
		Base:       redirect{to: to, base: f.srv.Client().Transport},
		Classifier: unrouted{t},
		Routes:     []retrybudget.Route{route},
	})}
}

// call sends one request and returns the response, its body and its
// Outcome. A nil ctx means context.Background().
func call(ctx context.Context, t *testing.T, c *http.Client, method, rawURL string, header ...string) (*http.Response, string, retrybudget.Outcome) {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"amount":1999}`)
	}
	req, err := http.NewRequestWithContext(ctx, method, rawURL, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		var e *retrybudget.Error
		if errors.As(err, &e) {
			return nil, "", e.Outcome
		}
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, ok := retrybudget.OutcomeOf(resp)
	if !ok {
		t.Fatal("no Outcome on the response")
	}
	return resp, string(b), out
}

// near reports whether got is within tolerance of want.
func near(got, want time.Time, tolerance time.Duration) bool {
	d := got.Sub(want)
	return d >= -tolerance && d <= tolerance
}
