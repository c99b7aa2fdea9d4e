package slogretry_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/budget"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/limiter"
	"github.com/retrybudget/retrybudget/slogretry"
)

// logRecorder is a slog.Logger writing JSON records, at Debug and up, to a
// buffer that the test reads back one record per line.
type logRecorder struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (r *logRecorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.Write(p)
}

func (r *logRecorder) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(r, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func (r *logRecorder) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.String()
}

// records parses every logged record.
func (r *logRecorder) records(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(r.text()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("record %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// logScript is an offline provider: it answers with its steps in turn (the
// last repeats) and never touches the network.
type logScript struct {
	mu    sync.Mutex // guards n
	n     int
	steps []func(*http.Request) (*http.Response, error)
}

func (s *logScript) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	s.mu.Lock()
	s.n++
	step := s.steps[min(s.n, len(s.steps))-1]
	s.mu.Unlock()
	return step(req)
}

func logAnswer(code int, kv ...string) func(*http.Request) (*http.Response, error) {
	return func(req *http.Request) (*http.Response, error) {
		h := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return &http.Response{StatusCode: code, Header: h, Request: req,
			Body: io.NopCloser(strings.NewReader(`{"echo":"` + req.URL.RawQuery + `"}`))}, nil
	}
}

func TestObserverNilLoggerIsSilent(t *testing.T) {
	o := slogretry.Observer(nil)
	if o.Attempt != nil || o.Retry != nil || o.GiveUp != nil || o.Budget != nil || o.Limited != nil ||
		o.Cooldown != nil || o.Ledger != nil {
		t.Fatalf("Observer(nil) = %+v; want the zero retrybudget.Observer", o)
	}
}

// TestObserverTransport drives a real Transport against an httptest
// server answering 503, 429, then 200, and checks the records in order.
func TestObserverTransport(t *testing.T) {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		i := n
		mu.Unlock()
		switch i {
		case 1:
			w.WriteHeader(http.StatusServiceUnavailable)
		case 2:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			io.WriteString(w, "ok")
		}
	}))
	defer srv.Close()

	var rec logRecorder
	client := &http.Client{Transport: retrybudget.New(retrybudget.Config{
		Base:      srv.Client().Transport,
		BaseDelay: time.Millisecond,
		Observer:  slogretry.Observer(rec.logger(), showIDs),
	})}
	req, _ := http.NewRequest("POST", srv.URL+"/v1/charges?expand=customer", strings.NewReader(`{"amount":1999}`))
	req.Header.Set("Idempotency-Key", "order-1042")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	host := strings.TrimPrefix(srv.URL, "http://")
	want := []struct {
		msg, level string
		attrs      map[string]any
	}{
		{"retrybudget: attempt", "DEBUG", map[string]any{"attempt": 1.0, "class": "capacity", "status": 503.0}},
		{"retrybudget: retry budget allowed a retry", "DEBUG", map[string]any{"destination": host}},
		{"retrybudget: retry", "INFO", map[string]any{"attempt": 2.0, "class": "capacity"}},
		{"retrybudget: attempt", "DEBUG", map[string]any{"attempt": 2.0, "class": "capacity", "status": 429.0}},
		{"retrybudget: retry budget allowed a retry", "DEBUG", map[string]any{"destination": host}},
		{"retrybudget: retry", "INFO", map[string]any{"attempt": 3.0, "class": "capacity"}},
		{"retrybudget: attempt", "DEBUG", map[string]any{"attempt": 3.0, "class": "success", "status": 200.0}},
	}
	got := rec.records(t)
	if len(got) != len(want) {
		t.Fatalf("%d records; want %d:\n%s", len(got), len(want), rec.text())
	}
	for i, w := range want {
		r := got[i]
		if r["msg"] != w.msg || r["level"] != w.level {
			t.Errorf("record %d: %v %q; want %s %q", i, r["level"], r["msg"], w.level, w.msg)
		}
		common := map[string]any{"method": "POST", "host": host, "path": "/v1/charges"}
		if !strings.HasPrefix(w.msg, "retrybudget: retry budget") {
			common["key"] = "bff83cdfb94d8087" // the hashed key
		}
		for k, v := range common {
			w.attrs[k] = v
		}
		for k, v := range w.attrs {
			if r[k] != v {
				t.Errorf("record %d (%s): %s = %v; want %v", i, w.msg, k, r[k], v)
			}
		}
		if w.msg == "retrybudget: retry" {
			if _, ok := r["delay"]; !ok {
				t.Errorf("record %d: retry without delay: %v", i, r)
			}
		}
	}
	if strings.Contains(rec.text(), "expand") {
		t.Errorf("the query string was logged:\n%s", rec.text())
	}
}

// TestObserverEvents calls each callback directly and checks its message,
// level and attributes, including the events a plain Transport run does not
// produce without a limiter.
func TestObserverEvents(t *testing.T) {
	req, _ := http.NewRequest("POST", "https://api.example.com/v1/refunds", nil)
	retryAt := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name  string
		emit  func(retrybudget.Observer)
		level string
		msg   string
		attrs map[string]any
	}{{
		name: "attempt with transport error",
		emit: func(o retrybudget.Observer) {
			o.Attempt(retrybudget.AttemptEvent{Request: req, Attempt: 2, Key: "k", Class: retrybudget.ClassNotSent,
				Err: errors.New("dial tcp: connection refused"), Duration: 3 * time.Millisecond})
		},
		level: "DEBUG", msg: "retrybudget: attempt",
		attrs: map[string]any{"attempt": 2.0, "key": "8254c329a92850f6", "class": "transport-not-sent",
			"error": "dial tcp: connection refused", "duration": float64(3 * time.Millisecond)},
	}, {
		name: "hedged copy cancelled",
		emit: func(o retrybudget.Observer) {
			o.Attempt(retrybudget.AttemptEvent{Request: req, Attempt: 1, Class: retrybudget.ClassMaybeSent,
				Err: context.Canceled, Duration: 30 * time.Millisecond, Hedge: true, Canceled: true})
		},
		level: "DEBUG", msg: "retrybudget: attempt",
		attrs: map[string]any{"attempt": 1.0, "class": "transport-maybe-sent", "error": "context canceled",
			"duration": float64(30 * time.Millisecond), "hedge": true, "canceled": true},
	}, {
		name: "retry with Retry-After",
		emit: func(o retrybudget.Observer) {
			o.Retry(retrybudget.RetryEvent{Request: req, Attempt: 3, Class: retrybudget.ClassCapacity,
				Delay: 2 * time.Second, RetryAfter: 2 * time.Second})
		},
		level: "INFO", msg: "retrybudget: retry",
		attrs: map[string]any{"attempt": 3.0, "class": "capacity",
			"delay": float64(2 * time.Second), "retry_after": float64(2 * time.Second)},
	}, {
		name: "give up",
		emit: func(o retrybudget.Observer) {
			o.GiveUp(retrybudget.GiveUpEvent{Request: req, Outcome: retrybudget.Outcome{
				Class: retrybudget.ClassServer, Attempts: 4, Key: "k", StatusCode: 502, MaybeApplied: true,
				RetryAt: retryAt, Reason: retrybudget.ErrAttemptsExhausted,
				Problem: &retrybudget.Problem{Detail: "card 4242 declined"}}})
		},
		level: "WARN", msg: "retrybudget: give up",
		attrs: map[string]any{"attempts": 4.0, "key": "8254c329a92850f6", "class": "server", "status": 502.0,
			"reason": retrybudget.ErrAttemptsExhausted.Error(), "retry_at": "2030-01-02T03:04:05Z", "maybe_applied": true},
	}, {
		name: "budget refusal",
		emit: func(o retrybudget.Observer) {
			o.Budget(retrybudget.BudgetEvent{Request: req, Destination: "api.example.com",
				Decision: budget.Decision{Deposits: 10, Retries: 1, Fallback: true}})
		},
		level: "WARN", msg: "retrybudget: retry budget refused a retry",
		attrs: map[string]any{"destination": "api.example.com", "deposits": 10.0, "retries": 1.0,
			"ratio": 0.1, "fallback": true},
	}, {
		name: "limiter wait",
		emit: func(o retrybudget.Observer) {
			o.Limited(retrybudget.LimitEvent{Request: req, Boundary: "api.example.com",
				Decision: limiter.Decision{RetryAfter: time.Second, Reason: limiter.ReasonRate, Fallback: true},
				Wait:     time.Second})
		},
		level: "DEBUG", msg: "retrybudget: rate limiter wait",
		attrs: map[string]any{"boundary": "api.example.com", "wait": float64(time.Second),
			"reason": "rate", "fallback": true},
	}, {
		name: "cooldown",
		emit: func(o retrybudget.Observer) {
			o.Cooldown(retrybudget.LimitEvent{Request: req, Boundary: "api.example.com", Until: retryAt})
		},
		level: "INFO", msg: "retrybudget: boundary cooldown",
		attrs: map[string]any{"boundary": "api.example.com", "until": "2030-01-02T03:04:05Z"},
	}, {
		name: "ledger conflict",
		emit: func(o retrybudget.Observer) {
			o.Ledger(retrybudget.LedgerEvent{Request: req, Action: retrybudget.Action{Tenant: "acme", Operation: "refund", Key: "r-9"},
				Verdict: ledger.VerdictConflict, Path: []string{"record completed", "fingerprint differs"}})
		},
		level: "WARN", msg: "retrybudget: ledger decision",
		attrs: map[string]any{"tenant": "acme", "action_key": "r-9", "operation": "refund", "action": "4d83be8ce2fa69c4", "verdict": "conflict",
			"decision": []any{"record completed", "fingerprint differs"}},
	}, {
		name: "ledger replay",
		emit: func(o retrybudget.Observer) {
			o.Ledger(retrybudget.LedgerEvent{Request: req, Action: retrybudget.Action{Tenant: "acme", Operation: "refund", Key: "r-9"},
				Verdict: ledger.VerdictReplayed})
		},
		level: "INFO", msg: "retrybudget: ledger decision",
		attrs: map[string]any{"tenant": "acme", "action_key": "r-9", "operation": "refund", "action": "4d83be8ce2fa69c4", "verdict": "replayed"},
	}, {
		name: "ledger store failure",
		emit: func(o retrybudget.Observer) {
			o.Ledger(retrybudget.LedgerEvent{Request: req, Action: retrybudget.Action{Tenant: "acme", Operation: "refund", Key: "r-9"},
				Op: "complete", Err: errors.New("redis: connection pool timeout")})
		},
		level: "ERROR", msg: "retrybudget: ledger store failed",
		attrs: map[string]any{"action": "4d83be8ce2fa69c4", "op": "complete", "error": "redis: connection pool timeout"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec logRecorder
			tt.emit(slogretry.Observer(rec.logger(), showIDs))
			got := rec.records(t)
			if len(got) != 1 {
				t.Fatalf("%d records; want 1:\n%s", len(got), rec.text())
			}
			r := got[0]
			if r["level"] != tt.level || r["msg"] != tt.msg {
				t.Errorf("got %v %q; want %s %q", r["level"], r["msg"], tt.level, tt.msg)
			}
			tt.attrs["method"], tt.attrs["host"], tt.attrs["path"] = "POST", "api.example.com", "/v1/refunds"
			for k, v := range tt.attrs {
				if !reflect.DeepEqual(r[k], v) {
					t.Errorf("%s = %v (%T); want %v", k, r[k], r[k], v)
				}
			}
			if strings.Contains(rec.text(), "4242") {
				t.Errorf("problem details from the body were logged:\n%s", rec.text())
			}
		})
	}
}

// TestObserverLevelFilter checks that a logger above Debug gets no
// attempt records but still gets retries.
// A budget destination holding a credential hash (limiter.ByCredential) is
// logged only up to its '#', like a boundary, unless identities are shown.
func TestObserverHidesTheDestinationsCredentialHash(t *testing.T) {
	req, _ := http.NewRequest("POST", "https://api.example.com/v1/refunds", nil)
	const dest, hash = "api.example.com#5e884898da280471", "5e884898da280471"
	for _, show := range []bool{false, true} {
		var buf bytes.Buffer
		obs := slogretry.Observer(slog.New(slog.NewJSONHandler(&buf, nil)), retrybudget.Identities{ShowIdentities: show})
		obs.Budget(retrybudget.BudgetEvent{Request: req, Destination: dest})
		if got := strings.Contains(buf.String(), hash); got != show {
			t.Errorf("ShowIdentities=%v: credential hash logged = %v:\n%s", show, got, buf.String())
		}
		if !strings.Contains(buf.String(), `"destination":"api.example.com`) {
			t.Errorf("ShowIdentities=%v: destination host not logged:\n%s", show, buf.String())
		}
	}
}

// OmitPath keeps a secret carried in the URL path (a webhook token) out of
// every record; the host is still logged.
func TestObserverOmitPath(t *testing.T) {
	req, _ := http.NewRequest("POST", "https://hooks.example.com/services/T0/B0/xoxsecretpath", nil)
	for _, omit := range []bool{false, true} {
		var buf bytes.Buffer
		obs := slogretry.Observer(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})),
			retrybudget.Identities{OmitPath: omit})
		obs.Attempt(retrybudget.AttemptEvent{Request: req, Attempt: 1})
		obs.GiveUp(retrybudget.GiveUpEvent{Request: req, Outcome: retrybudget.Outcome{Reason: retrybudget.ErrRejected}})
		out := buf.String()
		if got := strings.Contains(out, "xoxsecretpath"); got == omit {
			t.Errorf("OmitPath=%v: path logged = %v:\n%s", omit, got, out)
		}
		if !strings.Contains(out, "hooks.example.com") {
			t.Errorf("OmitPath=%v: host not logged:\n%s", omit, out)
		}
	}
}

func TestObserverLevelFilter(t *testing.T) {
	var buf bytes.Buffer
	o := slogretry.Observer(slog.New(slog.NewJSONHandler(&buf, nil)))
	req, _ := http.NewRequest("GET", "https://api.example.com/", nil)
	o.Attempt(retrybudget.AttemptEvent{Request: req, Attempt: 1, StatusCode: 503, Class: retrybudget.ClassCapacity})
	if buf.Len() != 0 {
		t.Fatalf("an Info logger got an attempt record: %s", buf.String())
	}
	o.Retry(retrybudget.RetryEvent{Request: req, Attempt: 2, Class: retrybudget.ClassCapacity})
	if !strings.Contains(buf.String(), `"msg":"retrybudget: retry"`) {
		t.Fatalf("an Info logger missed the retry record: %q", buf.String())
	}
}

// TestObserverNeverLogsCredentials sends a request carrying secrets in
// every place a request can carry them, through a provider that fails in
// every way the Transport reports, and checks that none reaches the log.
func TestObserverNeverLogsCredentials(t *testing.T) {
	const raw = "https://user:pw@api.example.com/v1/charges?token=secret"
	transportErr := func(req *http.Request) (*http.Response, error) {
		// http.Client would report the URL with its query string in a
		// *url.Error; a Base that wraps a Client does the same.
		return nil, fmt.Errorf("base: %w", &url.Error{Op: "Post", URL: req.URL.String(),
			Err: errors.New("connection reset by peer")})
	}
	provider := &logScript{steps: []func(*http.Request) (*http.Response, error){
		logAnswer(503, "Set-Cookie", "s=secret"),
		transportErr,
		logAnswer(429, "Retry-After", "0", "X-Token", "secret"),
		logAnswer(422),
	}}
	lim, err := limiter.NewLocal(limiter.LocalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var rec logRecorder
	obs := slogretry.Observer(rec.logger(), showIDs)
	client := &http.Client{Transport: retrybudget.New(retrybudget.Config{
		Base:      provider,
		BaseDelay: time.Millisecond,
		Observer:  obs,
		Limiter:   lim,
	})}
	req, _ := http.NewRequest("POST", raw, strings.NewReader(`{"card":"secret"}`))
	req.Header.Set("Authorization", "Bearer secret")
	req.Header.Set("Cookie", "c=secret")
	req.Header.Set("Idempotency-Key", "order-7")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	// Events the run above cannot produce, with the same request.
	obs.Limited(retrybudget.LimitEvent{Request: req, Boundary: "api.example.com", Wait: time.Second})
	obs.Cooldown(retrybudget.LimitEvent{Request: req, Boundary: "api.example.com", Until: time.Now()})
	obs.Budget(retrybudget.BudgetEvent{Request: req, Destination: "api.example.com"})
	obs.GiveUp(retrybudget.GiveUpEvent{Request: req, Outcome: retrybudget.Outcome{
		Reason: retrybudget.ErrRejected, Problem: &retrybudget.Problem{Detail: "token=secret"}}})

	out := rec.text()
	for _, msg := range []string{"retrybudget: attempt", "retrybudget: retry", "retrybudget: give up",
		"retrybudget: rate limiter wait", "retrybudget: boundary cooldown", "connection reset by peer"} {
		if !strings.Contains(out, msg) {
			t.Errorf("log lacks %q:\n%s", msg, out)
		}
	}
	for _, secret := range []string{"secret", "pw", "token"} {
		if strings.Contains(out, secret) {
			t.Errorf("log contains %q:\n%s", secret, out)
		}
	}
}

// Without an ActionKey and with identities hidden, no record names the
// action by its unkeyed ID, which a guess of tenant and order number would
// match.
func TestObserverOmitsTheUnkeyedActionID(t *testing.T) {
	var buf bytes.Buffer
	k := ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-1"}
	obs := slogretry.Observer(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	obs.Ledger(retrybudget.LedgerEvent{Action: k, Op: "complete", Err: errors.New("down")})
	if strings.Contains(buf.String(), k.ID()[:16]) || strings.Contains(buf.String(), `"action"`) {
		t.Fatalf("the record names the action without a key: %s", buf.String())
	}
}

// TestObserverLedger runs an action twice and once changed through a
// Transport with a ledger, and checks the created, replayed and conflict
// records.
func TestObserverLedger(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	var rec logRecorder
	ids := retrybudget.Identities{ActionKey: []byte("log-action-key-of-the-deployment")}
	tr := retrybudget.New(retrybudget.Config{
		Base:     srv.Client().Transport,
		Ledger:   retrybudget.LedgerConfig{Store: ledger.NewMemory(ledger.MemoryConfig{})},
		Observer: slogretry.Observer(rec.logger(), ids),
	})
	act := retrybudget.Action{Tenant: "acme", Operation: "charge", Key: "order-1"}
	for _, body := range []string{`{"amount":100}`, `{"amount":100}`, `{"amount":999}`} {
		req, _ := http.NewRequestWithContext(retrybudget.WithAction(context.Background(), act), "POST", srv.URL+"/v1/charges",
			strings.NewReader(body))
		resp, err := tr.RoundTrip(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	var got []string
	for _, r := range rec.records(t) {
		if r["msg"] == "retrybudget: ledger decision" {
			got = append(got, fmt.Sprint(r["level"], " ", r["verdict"], " ", r["tenant"], " ", r["operation"], " ", r["action"]))
		}
	}
	k := ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-1"}
	id := ids.ActionID(k) // tenant and key only hashed, under the deployment's key
	if id == "" || id == k.ID()[:16] {
		t.Fatalf("ActionID = %q; want a keyed hash, not the record's unkeyed ID", id)
	}
	want := []string{"DEBUG created <nil> charge " + id, "INFO replayed <nil> charge " + id, "WARN conflict <nil> charge " + id}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ledger records %q; want %q\n%s", got, want, rec.text())
	}
}

// Example_logObserver logs a call that is retried twice. The handler drops
// the time and the attempt durations to keep the output stable; in
// production, pass the service's logger as is.
func Example_logObserver() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelInfo,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	provider := &logScript{steps: []func(*http.Request) (*http.Response, error){
		logAnswer(503, "Retry-After", "0"),
		logAnswer(429, "Retry-After", "0"),
		logAnswer(422),
	}}
	client := &http.Client{Transport: retrybudget.New(retrybudget.Config{
		Base:      provider,
		BaseDelay: time.Millisecond,
		Jitter:    -1,
		Observer:  slogretry.Observer(logger),
	})}

	req, _ := http.NewRequestWithContext(context.Background(), "POST",
		"https://api.example.com/v1/charges?api_key=sk_live_123", strings.NewReader(`{"amount":1999}`))
	req.Header.Set("Idempotency-Key", "order-1042")
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	resp.Body.Close()
	// Output:
	// level=INFO msg="retrybudget: retry" method=POST host=api.example.com path=/v1/charges attempt=2 class=capacity delay=1ms
	// level=INFO msg="retrybudget: retry" method=POST host=api.example.com path=/v1/charges attempt=3 class=capacity delay=2ms
	// level=WARN msg="retrybudget: give up" method=POST host=api.example.com path=/v1/charges attempts=3 class=business status=422 reason="retrybudget: rejected by the provider" maybe_applied=false
}

// showIDs is the opt-in the tests of what Observer records use, so they
// see every attribute; TestObserversKeepIdentitiesOut checks the default.
var showIDs = retrybudget.Identities{ShowIdentities: true}

func TestObserverKeepsKeysAndTenantsOutOfLogs(t *testing.T) {
	// The Transport and the inbound middleware follow one rule: no raw key
	// or tenant in the logs, and the action named by Identities.ActionID.
	var buf bytes.Buffer
	ids := retrybudget.Identities{ActionKey: []byte("log-action-key-of-the-deployment")}
	obs := slogretry.Observer(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), ids)
	req, _ := http.NewRequest("POST", "https://api.example.com/v1/charges", nil)
	act := retrybudget.Action{Tenant: "tenant-secret", Operation: "charge", Key: "order-secret"}
	obs.Attempt(retrybudget.AttemptEvent{Request: req, Attempt: 1, Key: "key-secret", Class: retrybudget.ClassServer})
	obs.GiveUp(retrybudget.GiveUpEvent{Request: req, Outcome: retrybudget.Outcome{Key: "key-secret", Reason: retrybudget.ErrUncertain}})
	obs.Ledger(retrybudget.LedgerEvent{Request: req, Action: act, Op: "reserve", Verdict: ledger.VerdictConflict})
	obs.Ledger(retrybudget.LedgerEvent{Request: req, Action: act, Op: "complete", Err: errors.New("down")})
	out := buf.String()
	for _, raw := range []string{"tenant-secret", "order-secret", "key-secret"} {
		if strings.Contains(out, raw) {
			t.Errorf("log carries %q:\n%s", raw, out)
		}
	}
	if id := ids.ActionID(act); strings.Count(out, id) != 2 {
		t.Errorf("ledger records do not name the action by its ID %s, as the middleware does:\n%s", id, out)
	}
}
