package retrybudget

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestRetryByClass(t *testing.T) {
	type want struct {
		attempts int
		status   int
		reason   error
	}
	tests := []struct {
		name   string
		method string
		key    bool // attach an Action
		first  step
		want   want
	}{
		{"429 GET retried", "GET", false, status(429), want{2, 200, nil}},
		{"503 POST retried", "POST", false, status(503), want{2, 200, nil}},
		{"408 POST retried", "POST", false, status(408), want{2, 200, nil}},
		{"425 POST retried", "POST", false, status(425), want{2, 200, nil}},
		{"500 GET retried", "GET", false, status(500), want{2, 200, nil}},
		{"502 PUT retried", "PUT", false, status(502), want{2, 200, nil}},
		{"504 keyed POST retried", "POST", true, status(504), want{2, 200, nil}},
		{"500 unkeyed POST uncertain", "POST", false, status(500), want{1, 500, ErrUncertain}},
		{"502 unkeyed PATCH uncertain", "PATCH", false, status(502), want{1, 502, ErrUncertain}},
		{"400 never retried", "GET", false, status(400), want{1, 400, ErrRejected}},
		{"404 never retried", "GET", false, status(404), want{1, 404, ErrRejected}},
		{"409 keyed never retried", "POST", true, status(409), want{1, 409, ErrRejected}},
		{"422 never retried", "POST", true, status(422), want{1, 422, ErrRejected}},
		{"501 never retried", "GET", false, status(501), want{1, 501, ErrRejected}},
		{"302 is an answer", "GET", false, status(302, "Location", "/elsewhere"), want{1, 302, nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProvider(t, tt.first, status(200))
			tr, _ := newFakeTransport(Config{})
			ctx := context.Background()
			if tt.key {
				ctx = WithAction(ctx, Action{Tenant: "t", Operation: "op", Key: tt.name})
			}
			resp, err := send(ctx, t, tr, tt.method, p.URL, "")
			if err != nil {
				t.Fatalf("RoundTrip error %v; want a response", err)
			}
			o := finalOutcome(t, resp)
			if resp.StatusCode != tt.want.status || o.Attempts != tt.want.attempts || !errors.Is(o.Reason, tt.want.reason) {
				t.Fatalf("status %d, attempts %d, reason %v; want %d, %d, %v",
					resp.StatusCode, o.Attempts, o.Reason, tt.want.status, tt.want.attempts, tt.want.reason)
			}
			if got := len(p.requests()); got != tt.want.attempts {
				t.Fatalf("provider saw %d requests; want %d", got, tt.want.attempts)
			}
			if (tt.want.reason == nil) != (o.Err() == nil) {
				t.Fatalf("Outcome.Err() = %v with reason %v", o.Err(), o.Reason)
			}
		})
	}
}

func TestLostResponseToUnkeyedPostIsNotRetried(t *testing.T) {
	p := newProvider(t, lost, status(201))
	tr, fc := newFakeTransport(Config{})
	resp, err := send(context.Background(), t, tr, "POST", p.URL, `{"amount":100}`)
	if err == nil {
		resp.Body.Close()
		t.Fatal("RoundTrip succeeded; want an uncertain-outcome error")
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v; want *Error", err, err)
	}
	if !errors.Is(err, ErrUncertain) || e.Class != ClassMaybeSent || !e.MaybeApplied || e.Attempts != 1 {
		t.Fatalf("got reason %v class %v maybeApplied %v attempts %d; want ErrUncertain, maybe-sent, true, 1",
			e.Reason, e.Class, e.MaybeApplied, e.Attempts)
	}
	if e.Cause == nil {
		t.Fatal("Cause is nil; want the transport error")
	}
	if n := len(p.requests()); n != 1 {
		t.Fatalf("provider saw %d requests; want 1", n)
	}
	if len(fc.Sleeps()) != 0 {
		t.Fatal("slept before giving up an uncertain request")
	}
}

func TestLostResponseToKeyedPostIsRetriedUnderTheSameKey(t *testing.T) {
	for _, tt := range []struct {
		name   string
		ctx    context.Context
		header string
		cfg    Config
	}{
		{"action", WithAction(context.Background(), Action{Tenant: "acme", Operation: "charge", Key: "order-1"}), "", Config{}},
		{"caller key", context.Background(), "caller-key-1", Config{}},
		{"generated key, provider honours keys", context.Background(), "", Config{KeysHonoured: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newProvider(t, lost, status(201))
			tr, _ := newFakeTransport(tt.cfg)
			req, _ := http.NewRequestWithContext(tt.ctx, "POST", p.URL, strings.NewReader(`{"amount":100}`))
			if tt.header != "" {
				req.Header.Set("Idempotency-Key", tt.header)
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			o := finalOutcome(t, resp)
			reqs := p.requests()
			if resp.StatusCode != 201 || len(reqs) != 2 || o.Attempts != 2 {
				t.Fatalf("status %d after %d requests; want 201 after 2", resp.StatusCode, len(reqs))
			}
			if reqs[0].key == "" || reqs[0].key != reqs[1].key || reqs[0].key != o.Key {
				t.Fatalf("keys %q, %q, outcome %q; want one key on both attempts", reqs[0].key, reqs[1].key, o.Key)
			}
			if reqs[1].body != `{"amount":100}` {
				t.Fatalf("retried body %q; want the original", reqs[1].body)
			}
			if tt.header != "" && o.Key != tt.header {
				t.Fatalf("key %q; want the caller's %q kept", o.Key, tt.header)
			}
			if !o.MaybeApplied {
				t.Fatal("MaybeApplied is false after a lost response")
			}
		})
	}
}

func TestNotSentIsRetriedForAnyMethod(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: every dial is refused
	tr, fc := newFakeTransport(Config{})
	_, err = send(context.Background(), t, tr, "POST", "http://"+addr+"/charge", "x")
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v; want *Error", err)
	}
	if e.Class != ClassNotSent || e.MaybeApplied || e.Attempts != DefaultMaxAttempts || !errors.Is(err, ErrAttemptsExhausted) {
		t.Fatalf("class %v maybeApplied %v attempts %d reason %v; want not-sent, false, %d, exhausted",
			e.Class, e.MaybeApplied, e.Attempts, e.Reason, DefaultMaxAttempts)
	}
	var opErr *net.OpError
	if !errors.As(err, &opErr) {
		t.Fatalf("error %v does not unwrap to the dial error", err)
	}
	if n := len(fc.Sleeps()); n != DefaultMaxAttempts-1 {
		t.Fatalf("%d sleeps; want %d", n, DefaultMaxAttempts-1)
	}
}

func TestAttemptTimeoutRetriesIdempotentRequests(t *testing.T) {
	// The real clock is the point: the attempt must be cut by a real timer.
	release := make(chan struct{})
	defer close(release)
	p := newProvider(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}, status(200))
	tr := New(Config{AttemptTimeout: 50 * time.Millisecond, BaseDelay: time.Millisecond})
	resp, err := send(context.Background(), t, tr, "GET", p.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	if o := finalOutcome(t, resp); o.Attempts != 2 || resp.StatusCode != 200 {
		t.Fatalf("attempts %d status %d; want 2, 200", o.Attempts, resp.StatusCode)
	}
}

func TestResendsByNetHTTPAreCounted(t *testing.T) {
	// Regression: net/http re-sends a request with an Idempotency-Key and
	// GetBody by itself when a reused connection breaks after the write.
	// The first write was applied, so the outcome must say so.
	p := newProvider(t, status(200), lost, status(429, "Retry-After", "3600"))
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	tr, _ := newFakeTransport(Config{Base: base})
	warm, err := send(context.Background(), t, tr, "GET", p.URL, "") // leaves an idle connection to reuse
	if err != nil {
		t.Fatal(err)
	}
	finalOutcome(t, warm)
	ctx := WithAction(context.Background(), Action{Tenant: "acme", Operation: "charge", Key: "order-85"})
	resp, err := send(ctx, t, tr, "POST", p.URL, "pay")
	if err != nil {
		t.Fatal(err)
	}
	o := finalOutcome(t, resp)
	if got := len(p.requests()); got != 3 {
		t.Fatalf("provider saw %d requests; want 3 (warm-up, lost, net/http's re-send)", got)
	}
	if o.Attempts != 2 || !o.MaybeApplied || !errors.Is(o.Reason, ErrWaitTooLong) {
		t.Fatalf("attempts %d, maybeApplied %v, reason %v; want 2, true, ErrWaitTooLong", o.Attempts, o.MaybeApplied, o.Reason)
	}
}
