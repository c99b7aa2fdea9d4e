package idempotency_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/idempotency"
	"github.com/retrybudget/retrybudget/internal/fakeclock"
	"github.com/retrybudget/retrybudget/ledger"
)

// newFakeClock returns the Memory store's clock, which tests move.
func newFakeClock() *fakeclock.Clock {
	return fakeclock.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
}

// env is a service with one guarded handler on several routes, over a
// Memory store with a fake clock.
type env struct {
	clock *fakeclock.Clock
	store *ledger.Memory
	mux   *http.ServeMux
	runs  atomic.Int32
}

// handlerFunc is a test handler; run counts its calls from 1.
type handlerFunc func(run int, w http.ResponseWriter, r *http.Request)

func newEnv(t *testing.T, cfg idempotency.Config, h handlerFunc) *env {
	t.Helper()
	e := &env{clock: newFakeClock()}
	e.store = ledger.NewMemory(ledger.MemoryConfig{Now: e.clock.Now})
	if cfg.Store == nil {
		cfg.Store = e.store
	}
	if cfg.Tenant == nil {
		cfg.Tenant = testTenant
	}
	guard := idempotency.New(cfg)
	handler := guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h(int(e.runs.Add(1)), w, r)
	}))
	e.mux = http.NewServeMux()
	for _, p := range []string{"POST /things", "PATCH /things", "GET /things", "POST /other"} {
		e.mux.Handle(p, handler)
	}
	return e
}

// created is the ordinary handler: 201 with the run number in the body.
func created(run int, w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", fmt.Sprintf("/things/%d", run))
	w.Header().Set("Set-Cookie", "session=secret")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"run":%d}`, run)
}

// failThenCreate answers status on the first run and behaves like created
// afterwards; mark calls MarkEffect before failing.
func failThenCreate(status int, mark bool) handlerFunc {
	return func(run int, w http.ResponseWriter, r *http.Request) {
		if run == 1 {
			if mark {
				idempotency.MarkEffect(r.Context())
			}
			w.WriteHeader(status)
			return
		}
		created(run, w, r)
	}
}

// request is one request of a test.
type request struct {
	method string // "" means POST
	path   string // "" means /things
	// keys are the key header's field lines; nil means one line "k1".
	keys   []string
	noKey  bool
	body   string // "" means `{"n":1}`
	header http.Header
}

// defaultBody is the body of a request that sets none.
const defaultBody = `{"n":1}`

func (q request) build() *http.Request {
	method, path, body := q.method, q.path, q.body
	if method == "" {
		method = http.MethodPost
	}
	if path == "" {
		path = "/things"
	}
	if body == "" {
		body = defaultBody
	}
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	for n, vs := range q.header {
		r.Header[n] = vs
	}
	switch {
	case q.noKey:
	case q.keys == nil:
		r.Header.Set("Idempotency-Key", "k1")
	default:
		r.Header["Idempotency-Key"] = q.keys
	}
	return r
}

// response is what a client saw; panicked reports a handler panic that
// net/http would turn into an aborted connection.
type response struct {
	*httptest.ResponseRecorder
	panicked bool
}

// send serves q through the env's mux.
func (e *env) send(q request) (res response) {
	res.ResponseRecorder = httptest.NewRecorder()
	defer func() {
		if p := recover(); p != nil {
			res.panicked = true
		}
	}()
	e.mux.ServeHTTP(res.ResponseRecorder, q.build())
	return res
}

// fingerprint is the fingerprint the middleware computes for q with no
// fingerprinted headers.
func fingerprint(q request) string {
	r := q.build()
	body := q.body
	if body == "" {
		body = defaultBody
	}
	return ledger.Fingerprint(r.Method, r.URL, r.Header, nil, []byte(body))
}

// testTenant is the tenant newEnv gives a Config without one: the
// X-Tenant header, or defaultTenant without it.
func testTenant(r *http.Request) string {
	if t := r.Header.Get("X-Tenant"); t != "" {
		return t
	}
	return defaultTenant
}

// defaultTenant is testTenant's answer to a request without X-Tenant.
const defaultTenant = "acct_1"

// thingsKey is the action of key k on POST /things of defaultTenant.
func thingsKey(k string) ledger.Key {
	return ledger.Key{Tenant: defaultTenant, Operation: "POST /things", Key: k}
}

// problemBody decodes an RFC 9457 body.
func problemBody(t *testing.T, res response) retrybudget.Problem {
	t.Helper()
	if ct := res.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type = %q, want application/problem+json; body %s", ct, res.Body)
	}
	var p retrybudget.Problem
	if err := json.Unmarshal(res.Body.Bytes(), &p); err != nil {
		t.Fatalf("problem body %q: %v", res.Body, err)
	}
	return p
}

// mustURL parses a URL for ledger.Fingerprint.
func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}
