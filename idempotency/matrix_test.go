package idempotency_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/idempotency"
	"github.com/retrybudget/retrybudget/ledger"
)

// want is what one response must look like. A zero field is not checked,
// except header, whose "" values must be absent.
type want struct {
	status int
	// problem is the RFC 9457 type; when set the body must be a problem
	// with this type and the response's status.
	problem string
	body    string
	// anyBody skips the body check for a non-problem response.
	anyBody  bool
	header   map[string]string
	panicked bool
}

// step is one request of a row, sent after moving the clock by advance.
type step struct {
	advance time.Duration
	req     request
	want    want
}

// TestReplayMatrix drives every row of the package documentation's replay
// matrix through a Memory store, asserting the status, body, headers and
// how many times the handler ran.
func TestReplayMatrix(t *testing.T) {
	authzTenant, err := idempotency.CredentialTenant([]byte("matrix-test-secret-0123456789"), "Authorization")
	if err != nil {
		t.Fatal(err)
	}
	first := want{status: 201, body: `{"run":1}`, header: map[string]string{
		"Location": "/things/1", idempotency.HeaderReplayed: ""}}
	replayOf1 := want{status: 201, body: `{"run":1}`, header: map[string]string{
		"Location": "/things/1", "Content-Type": "application/json",
		idempotency.HeaderReplayed: "true", "Set-Cookie": ""}}
	rerun2 := want{status: 201, body: `{"run":2}`, header: map[string]string{idempotency.HeaderReplayed: ""}}
	big := strings.Repeat("x", 100)
	bigSum := sha256.Sum256([]byte(big))

	rows := []struct {
		name    string
		cfg     idempotency.Config
		handler handlerFunc
		// before runs on the store before the steps, as another server.
		before func(t *testing.T, e *env)
		steps  []step
		runs   int
	}{
		{
			name:  "unguarded GET passes through without a key",
			steps: []step{{req: request{method: "GET", noKey: true}, want: first}},
			runs:  1,
		},
		{
			name:  "missing key",
			steps: []step{{req: request{noKey: true}, want: want{status: 400, problem: idempotency.TypeMissingKey}}},
		},
		{
			name:  "missing key on PATCH",
			steps: []step{{req: request{method: "PATCH", noKey: true}, want: want{status: 400, problem: idempotency.TypeMissingKey}}},
		},
		{
			name:  "missing key allowed by KeyOptional runs unguarded",
			cfg:   idempotency.Config{KeyOptional: true},
			steps: []step{{req: request{noKey: true}, want: first}, {req: request{noKey: true}, want: rerun2}},
			runs:  2,
		},
		{
			name:  "malformed key: unterminated string",
			steps: []step{{req: request{keys: []string{`"k1`}}, want: want{status: 400, problem: idempotency.TypeMalformedKey}}},
		},
		{
			name:  "malformed key: parameters",
			steps: []step{{req: request{keys: []string{`"k1";v=1`}}, want: want{status: 400, problem: idempotency.TypeMalformedKey}}},
		},
		{
			name:  "malformed key: two field lines",
			steps: []step{{req: request{keys: []string{"k1", "k2"}}, want: want{status: 400, problem: idempotency.TypeMalformedKey}}},
		},
		{
			name:  "malformed key: empty string",
			steps: []step{{req: request{keys: []string{`""`}}, want: want{status: 400, problem: idempotency.TypeMalformedKey}}},
		},
		{
			name:  "malformed key: space in a bare key",
			steps: []step{{req: request{keys: []string{"k 1"}}, want: want{status: 400, problem: idempotency.TypeMalformedKey}}},
		},
		{
			name:  "malformed key: 256 bytes",
			steps: []step{{req: request{keys: []string{strings.Repeat("k", 256)}}, want: want{status: 400, problem: idempotency.TypeMalformedKey}}},
		},
		{
			name:  "255-byte key accepted",
			steps: []step{{req: request{keys: []string{strings.Repeat("k", 255)}}, want: first}},
			runs:  1,
		},
		{
			name:  "request body too large",
			cfg:   idempotency.Config{MaxRequestBody: 4},
			steps: []step{{req: request{body: "12345"}, want: want{status: 413, problem: idempotency.TypeBodyTooLarge}}},
		},
		{
			name:  "new key runs the handler",
			steps: []step{{req: request{}, want: first}},
			runs:  1,
		},
		{
			name:  "completed: replayed with stored status, safe headers and body",
			steps: []step{{req: request{}, want: first}, {req: request{}, want: replayOf1}, {req: request{}, want: replayOf1}},
			runs:  1,
		},
		{
			name: "quoted and bare spellings name one key",
			steps: []step{
				{req: request{keys: []string{`"tenant_a:campaign_19:revision_4"`}}, want: first},
				{req: request{keys: []string{"tenant_a:campaign_19:revision_4"}}, want: replayOf1},
			},
			runs: 1,
		},
		{
			name: "completed 4xx answer is replayed",
			handler: func(run int, w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				w.Write([]byte(`{"error":"revision must be positive"}`))
			},
			steps: []step{
				{req: request{}, want: want{status: 400, body: `{"error":"revision must be positive"}`}},
				{req: request{}, want: want{status: 400, body: `{"error":"revision must be positive"}`,
					header: map[string]string{idempotency.HeaderReplayed: "true"}}},
			},
			runs: 1,
		},
		{
			name:    "handler that wrote nothing: 200 with no body, replayed",
			handler: func(int, http.ResponseWriter, *http.Request) {},
			steps: []step{
				{req: request{}, want: want{status: 200, body: ""}},
				{req: request{}, want: want{status: 200, body: "", header: map[string]string{idempotency.HeaderReplayed: "true"}}},
			},
			runs: 1,
		},
		{
			name: "different body: conflict",
			steps: []step{
				{req: request{}, want: first},
				{req: request{body: `{"n":2}`}, want: want{status: 422, problem: idempotency.TypeConflict}},
			},
			runs: 1,
		},
		{
			name: "different query: conflict",
			steps: []step{
				{req: request{}, want: first},
				{req: request{path: "/things?dry_run=1"}, want: want{status: 422, problem: idempotency.TypeConflict}},
			},
			runs: 1,
		},
		{
			name: "fingerprinted header differs: conflict",
			cfg:  idempotency.Config{FingerprintHeaders: []string{"X-Account"}},
			steps: []step{
				{req: request{header: http.Header{"X-Account": {"a"}}}, want: first},
				{req: request{header: http.Header{"X-Account": {"b"}}}, want: want{status: 422, problem: idempotency.TypeConflict}},
			},
			runs: 1,
		},
		{
			name: "header not fingerprinted differs: replay",
			steps: []step{
				{req: request{header: http.Header{"X-Trace": {"a"}}}, want: first},
				{req: request{header: http.Header{"X-Trace": {"b"}}}, want: replayOf1},
			},
			runs: 1,
		},
		{
			// No run of the operation has ended in this process: the
			// answer is the PendingRetryAfter hint (1s), not the 20s
			// left of the owner's lease.
			name: "in progress elsewhere: pending with Retry-After",
			before: func(t *testing.T, e *env) {
				reserve(t, e, thingsKey("k1"), fingerprint(request{}))
				e.clock.Advance(10*time.Second + time.Millisecond)
			},
			steps: []step{{req: request{}, want: want{status: 409, problem: idempotency.TypePending,
				header: map[string]string{"Retry-After": "1"}}}},
		},
		{
			name: "in progress elsewhere, different fingerprint: conflict",
			before: func(t *testing.T, e *env) {
				reserve(t, e, thingsKey("k1"), fingerprint(request{body: `{"n":2}`}))
			},
			steps: []step{{req: request{}, want: want{status: 422, problem: idempotency.TypeConflict}}},
		},
		{
			name:    "5xx from the handler: failed, the key runs again",
			handler: failThenCreate(http.StatusInternalServerError, false),
			steps: []step{
				{req: request{}, want: want{status: 500, body: ""}},
				{req: request{}, want: rerun2},
				{req: request{}, want: want{status: 201, body: `{"run":2}`, header: map[string]string{idempotency.HeaderReplayed: "true"}}},
			},
			runs: 2,
		},
		{
			name:    "429 from the handler: failed, the key runs again",
			handler: failThenCreate(http.StatusTooManyRequests, false),
			steps:   []step{{req: request{}, want: want{status: 429, body: ""}}, {req: request{}, want: rerun2}},
			runs:    2,
		},
		{
			name:    "failed, then a different request: conflict",
			handler: failThenCreate(http.StatusServiceUnavailable, false),
			steps: []step{
				{req: request{}, want: want{status: 503, body: ""}},
				{req: request{body: `{"n":2}`}, want: want{status: 422, problem: idempotency.TypeConflict}},
			},
			runs: 1,
		},
		{
			name: "panic: failed, re-raised, the key runs again",
			handler: func(run int, w http.ResponseWriter, r *http.Request) {
				if run == 1 {
					panic(http.ErrAbortHandler)
				}
				created(run, w, r)
			},
			steps: []step{{req: request{}, want: want{panicked: true}}, {req: request{}, want: rerun2}},
			runs:  2,
		},
		{
			name: "success flushed to the client, then panic: uncertain, never run again",
			handler: func(run int, w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusCreated)
				w.Write([]byte(`{"charged":true`))
				http.NewResponseController(w).Flush()
				panic(http.ErrAbortHandler)
			},
			steps: []step{{req: request{}, want: want{panicked: true}},
				{req: request{}, want: want{status: 409, problem: idempotency.TypeUncertain, header: map[string]string{"Retry-After": ""}}}},
			runs: 1,
		},
		{
			name: "success streamed past MaxResponseBody, then panic: uncertain, never run again",
			cfg:  idempotency.Config{MaxResponseBody: 16},
			handler: func(run int, w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusCreated)
				w.Write([]byte(strings.Repeat("x", 32)))
				panic(http.ErrAbortHandler)
			},
			steps: []step{{req: request{}, want: want{panicked: true}},
				{req: request{}, want: want{status: 409, problem: idempotency.TypeUncertain, header: map[string]string{"Retry-After": ""}}}},
			runs: 1,
		},
		{
			name: "5xx flushed to the client, then panic: failed, the key runs again",
			handler: func(run int, w http.ResponseWriter, r *http.Request) {
				if run == 1 {
					w.WriteHeader(http.StatusServiceUnavailable)
					http.NewResponseController(w).Flush()
					panic(http.ErrAbortHandler)
				}
				created(run, w, r)
			},
			steps: []step{{req: request{}, want: want{panicked: true}}, {req: request{}, want: rerun2}},
			runs:  2,
		},
		{
			name:    "effect marked, then 5xx: uncertain, never run again",
			handler: failThenCreate(http.StatusInternalServerError, true),
			steps: []step{
				{req: request{}, want: want{status: 500, body: ""}},
				{req: request{}, want: want{status: 409, problem: idempotency.TypeUncertain, header: map[string]string{"Retry-After": ""}}},
			},
			runs: 1,
		},
		{
			name:    "effect marked, then 5xx, RerunUncertain: runs again",
			cfg:     idempotency.Config{RerunUncertain: true},
			handler: failThenCreate(http.StatusInternalServerError, true),
			steps:   []step{{req: request{}, want: want{status: 500, body: ""}}, {req: request{}, want: rerun2}},
			runs:    2,
		},
		{
			name: "owner died mid-request (lease over): uncertain",
			before: func(t *testing.T, e *env) {
				reserve(t, e, thingsKey("k1"), fingerprint(request{}))
				e.clock.Advance(ledger.DefaultLease)
			},
			steps: []step{{req: request{}, want: want{status: 409, problem: idempotency.TypeUncertain}}},
		},
		{
			name: "owner died, RerunUncertain: runs",
			cfg:  idempotency.Config{RerunUncertain: true},
			before: func(t *testing.T, e *env) {
				reserve(t, e, thingsKey("k1"), fingerprint(request{}))
				e.clock.Advance(ledger.DefaultLease)
			},
			steps: []step{{req: request{}, want: first}},
			runs:  1,
		},
		{
			name: "expired key: a new action, even for a different request",
			cfg:  idempotency.Config{Retention: time.Hour},
			steps: []step{
				{req: request{}, want: first},
				{advance: time.Hour - time.Millisecond, req: request{}, want: replayOf1},
				// Past the expiry: at the instant itself the record is
				// still there, as a Redis key is until its time has passed.
				{advance: 2 * time.Millisecond, req: request{body: `{"n":2}`}, want: rerun2},
			},
			runs: 2,
		},
		{
			name: "oversized body: sent whole, replayed as status and headers without it",
			cfg:  idempotency.Config{MaxResponseBody: 16},
			handler: func(run int, w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				w.Header().Set("Location", "/things/1")
				w.WriteHeader(http.StatusCreated)
				for i := 0; i < 10; i++ {
					w.Write([]byte(big[:10]))
				}
			},
			steps: []step{
				{req: request{}, want: want{status: 201, body: big}},
				{req: request{}, want: want{status: 201, body: "", header: map[string]string{
					idempotency.HeaderReplayed: "true", idempotency.HeaderBodyOmitted: "true",
					"Location": "/things/1", "Content-Type": "", "Content-Length": "0",
					"Repr-Digest": "sha-256=:" + base64.StdEncoding.EncodeToString(bigSum[:]) + ":"}}},
			},
			runs: 1,
		},
		{
			name: "flushed (streamed) body within the limit: replayed whole",
			handler: func(run int, w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusAccepted)
				w.Write([]byte("part1,"))
				http.NewResponseController(w).Flush()
				w.Write([]byte("part2"))
			},
			steps: []step{
				{req: request{}, want: want{status: 202, body: "part1,part2"}},
				{req: request{}, want: want{status: 202, body: "part1,part2", header: map[string]string{
					idempotency.HeaderReplayed: "true", idempotency.HeaderBodyOmitted: ""}}},
			},
			runs: 1,
		},
		{
			name: "ledger unavailable: 503, nothing runs",
			cfg:  idempotency.Config{Store: brokenStore{}},
			steps: []step{{req: request{}, want: want{status: 503, problem: idempotency.TypeLedgerUnavailable,
				header: map[string]string{"Retry-After": "1"}}}},
		},
		{
			name: "tenants never share a key",
			cfg:  idempotency.Config{Tenant: func(r *http.Request) string { return r.Header.Get("X-Tenant") }},
			steps: []step{
				{req: request{header: http.Header{"X-Tenant": {"a"}}}, want: first},
				{req: request{header: http.Header{"X-Tenant": {"b"}}}, want: rerun2},
				{req: request{header: http.Header{"X-Tenant": {"a"}}}, want: replayOf1},
			},
			runs: 2,
		},
		{
			name: "CredentialTenant: credentials never share a key",
			cfg:  idempotency.Config{Tenant: authzTenant},
			steps: []step{
				{req: request{header: http.Header{"Authorization": {"Bearer a"}}}, want: first},
				{req: request{header: http.Header{"Authorization": {"Bearer b"}}}, want: rerun2},
				{req: request{header: http.Header{"Authorization": {"Bearer a"}}}, want: replayOf1},
			},
			runs: 2,
		},
		{
			name: "default operation: routes never share a key",
			steps: []step{
				{req: request{}, want: first},
				{req: request{path: "/other"}, want: rerun2},
			},
			runs: 2,
		},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			h := row.handler
			if h == nil {
				h = created
			}
			e := newEnv(t, row.cfg, h)
			if row.before != nil {
				row.before(t, e)
			}
			for i, s := range row.steps {
				e.clock.Advance(s.advance)
				res := e.send(s.req)
				checkResponse(t, i, res, s.want)
			}
			if got := int(e.runs.Load()); got != row.runs {
				t.Errorf("handler ran %d times, want %d", got, row.runs)
			}
		})
	}
}

// checkResponse asserts that res is what w describes.
func checkResponse(t *testing.T, i int, res response, w want) {
	t.Helper()
	if res.panicked != w.panicked {
		t.Fatalf("step %d: panicked = %v, want %v", i, res.panicked, w.panicked)
	}
	if w.panicked {
		return
	}
	if res.Code != w.status {
		t.Errorf("step %d: status %d, want %d; body %s", i, res.Code, w.status, res.Body)
	}
	if w.problem != "" {
		p := problemBody(t, res)
		if p.Type != w.problem || p.Status != w.status || p.Title == "" || p.Detail == "" {
			t.Errorf("step %d: problem %+v, want type %s status %d with title and detail", i, p, w.problem, w.status)
		}
	} else if !w.anyBody && res.Body.String() != w.body {
		t.Errorf("step %d: body %q, want %q", i, res.Body, w.body)
	}
	for n, v := range w.header {
		got, ok := res.Result().Header[http.CanonicalHeaderKey(n)]
		switch {
		case v == "" && ok:
			t.Errorf("step %d: header %s = %q, want none", i, n, got)
		case v != "" && (len(got) != 1 || got[0] != v):
			t.Errorf("step %d: header %s = %q, want %q", i, n, got, v)
		}
	}
}

// reserve takes action k in e's store as another server would.
func reserve(t *testing.T, e *env, k ledger.Key, fp string) {
	t.Helper()
	res, err := e.store.Reserve(context.Background(), ledger.ReserveRequest{Key: k, Fingerprint: fp, Owner: "other-server"})
	if err != nil || res.Verdict != ledger.VerdictCreated {
		t.Fatalf("reserve: %v %v", res.Verdict, err)
	}
}

// brokenStore is a ledger.Store whose every call fails, like a Redis that
// is down.
type brokenStore struct{ ledger.Store }

func (brokenStore) Reserve(context.Context, ledger.ReserveRequest) (ledger.Reservation, error) {
	return ledger.Reservation{}, errDown
}

var errDown = errors.New("connection refused")
