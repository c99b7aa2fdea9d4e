package retrybudget

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/budget"
)

// get sends method to url through rt with ctx.
func send(t *testing.T, rt http.RoundTripper, ctx context.Context, method, url, body string) (*http.Response, error) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	return rt.RoundTrip(req)
}

// finalOutcome reads and closes resp's body and returns its Outcome.
func finalOutcome(t *testing.T, resp *http.Response) Outcome {
	t.Helper()
	o, ok := OutcomeOf(resp)
	if !ok {
		t.Fatal("OutcomeOf: no outcome on a Transport response")
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return o
}

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
		{"503 POST with Retry-After retried", "POST", false, status(503, "Retry-After", "1"), want{2, 200, nil}},
		{"408 POST retried", "POST", false, status(408), want{2, 200, nil}},
		{"425 POST retried", "POST", false, status(425), want{2, 200, nil}},
		{"500 GET retried", "GET", false, status(500), want{2, 200, nil}},
		{"502 PUT retried", "PUT", false, status(502), want{2, 200, nil}},
		{"504 keyed POST retried", "POST", true, status(504), want{2, 200, nil}},
		{"500 unkeyed POST uncertain", "POST", false, status(500), want{1, 500, ErrUncertain}},
		{"502 unkeyed PATCH uncertain", "PATCH", false, status(502), want{1, 502, ErrUncertain}},
		{"400 never retried", "GET", false, status(400), want{1, 400, ErrRejected}},
		{"404 never retried", "GET", false, status(404), want{1, 404, ErrRejected}},
		{"409 unkeyed never retried", "PUT", false, status(409), want{1, 409, ErrRejected}},
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
			resp, err := send(t, tr, ctx, tt.method, p.URL, "")
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

func TestRetryAfterIsNeverUndercut(t *testing.T) {
	date := func() string { return time.Now().Add(5 * time.Second).UTC().Format(http.TimeFormat) }
	tests := []struct {
		name  string
		first step
		min   time.Duration
	}{
		{"delta seconds", status(429, "Retry-After", "3"), 3 * time.Second},
		{"http date", func(w http.ResponseWriter, r *http.Request) {
			status(503, "Retry-After", date())(w, r)
		}, 3 * time.Second}, // at least the date minus test latency and second truncation
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProvider(t, tt.first, status(200))
			tr, fc := newFakeTransport(Config{BaseDelay: 10 * time.Millisecond})
			resp, err := send(t, tr, context.Background(), "GET", p.URL, "")
			if err != nil {
				t.Fatal(err)
			}
			if o := finalOutcome(t, resp); o.Attempts != 2 {
				t.Fatalf("attempts %d; want 2", o.Attempts)
			}
			sleeps := fc.Sleeps()
			if len(sleeps) != 1 || sleeps[0] < tt.min || sleeps[0] > 6*time.Second {
				t.Fatalf("sleeps %v; want one sleep in [%v, 6s]", sleeps, tt.min)
			}
		})
	}
}

func TestBackoffIsExponentialAndCapped(t *testing.T) {
	p := newProvider(t, status(503))
	tr, fc := newFakeTransport(Config{MaxAttempts: 6, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second, Jitter: -1})
	resp, err := send(t, tr, context.Background(), "GET", p.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	o := finalOutcome(t, resp)
	if !errors.Is(o.Reason, ErrAttemptsExhausted) || o.Attempts != 6 {
		t.Fatalf("reason %v after %d attempts; want ErrAttemptsExhausted after 6", o.Reason, o.Attempts)
	}
	want := []time.Duration{100, 200, 400, 800, 1000}
	got := fc.Sleeps()
	if len(got) != len(want) {
		t.Fatalf("sleeps %v; want %v ms", got, want)
	}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("sleep %d = %v; want %v", i, got[i], want[i]*time.Millisecond)
		}
	}
	if o.RetryAt.IsZero() {
		t.Fatal("RetryAt is zero after exhausting attempts; want the next backoff time")
	}
}

func TestJitterStaysInRange(t *testing.T) {
	p := newProvider(t, status(503))
	tr, fc := newFakeTransport(Config{Budget: budget.Unlimited{}, MaxAttempts: 40, BaseDelay: 100 * time.Millisecond, MaxDelay: 100 * time.Millisecond, Jitter: 0.5})
	resp, err := send(t, tr, context.Background(), "GET", p.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	finalOutcome(t, resp)
	distinct := map[time.Duration]bool{}
	for _, d := range fc.Sleeps() {
		if d < 50*time.Millisecond || d > 100*time.Millisecond {
			t.Fatalf("sleep %v outside [50ms, 100ms] (MaxDelay caps jitter)", d)
		}
		distinct[d] = true
	}
	if len(distinct) < 10 {
		t.Fatalf("only %d distinct delays in 39 sleeps: jitter is not applied", len(distinct))
	}
}

func TestGivesUpAtOnceWhenWaitCannotFit(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		ctxWait time.Duration // context deadline; 0 means none
		first   step
		reason  error
		retryIn time.Duration // RetryAt - now, at least
	}{
		{"retry-after past context deadline", Config{}, 2 * time.Second, status(429, "Retry-After", "10"), ErrDeadline, 10 * time.Second},
		{"retry-after past config deadline", Config{Deadline: 2 * time.Second}, 0, status(503, "Retry-After", "5"), ErrDeadline, 5 * time.Second},
		{"retry-after beyond MaxWait", Config{MaxWait: time.Minute}, 0, status(429, "Retry-After", "3600"), ErrWaitTooLong, time.Hour},
		{"backoff past deadline", Config{BaseDelay: 3 * time.Second, Jitter: -1}, 2 * time.Second, status(503), ErrDeadline, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProvider(t, tt.first, status(200))
			tr, fc := newFakeTransport(tt.cfg)
			ctx := context.Background()
			if tt.ctxWait > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.ctxWait)
				defer cancel()
			}
			start := fc.Now()
			resp, err := send(t, tr, ctx, "GET", p.URL, "")
			if err != nil {
				t.Fatalf("RoundTrip error %v; want the provider's response", err)
			}
			o := finalOutcome(t, resp)
			if !errors.Is(o.Reason, tt.reason) || o.Attempts != 1 {
				t.Fatalf("reason %v after %d attempts; want %v after 1", o.Reason, o.Attempts, tt.reason)
			}
			if s := fc.Sleeps(); len(s) != 0 {
				t.Fatalf("slept %v; want no sleep when the wait cannot fit", s)
			}
			if o.RetryAt.Sub(start) < tt.retryIn {
				t.Fatalf("RetryAt %v is %v after start; want at least %v", o.RetryAt, o.RetryAt.Sub(start), tt.retryIn)
			}
			var e *Error
			if !errors.As(o.Err(), &e) || e.StatusCode != resp.StatusCode || !e.RetryAt.Equal(o.RetryAt) {
				t.Fatalf("Outcome.Err() = %#v; want an *Error carrying the outcome", o.Err())
			}
		})
	}
}

func TestLostResponseToUnkeyedPostIsNotRetried(t *testing.T) {
	p := newProvider(t, lost, status(201))
	tr, fc := newFakeTransport(Config{})
	resp, err := send(t, tr, context.Background(), "POST", p.URL, `{"amount":100}`)
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
	_, err = send(t, tr, context.Background(), "POST", "http://"+addr+"/charge", "x")
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

func TestRoundTripperContract(t *testing.T) {
	p := newProvider(t, status(503), status(200))
	tr, _ := newFakeTransport(Config{})
	req, _ := http.NewRequest("POST", p.URL, io.NopCloser(strings.NewReader("payload")))
	req.Header.Set("X-Trace", "1")
	before := req.Header.Clone()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	finalOutcome(t, resp)
	if len(req.Header) != len(before) || req.Header.Get("Idempotency-Key") != "" || req.Header.Get("X-Trace") != "1" {
		t.Fatalf("caller's headers changed: %v; were %v", req.Header, before)
	}
	if req.GetBody != nil {
		t.Fatal("caller's request got a GetBody")
	}
	for _, r := range p.requests() {
		if r.body != "payload" {
			t.Fatalf("provider got body %q; want %q on every attempt", r.body, "payload")
		}
	}
}

func TestBodies(t *testing.T) {
	t.Run("GetBody is used for retries", func(t *testing.T) {
		p := newProvider(t, status(503), status(200))
		tr, _ := newFakeTransport(Config{MaxBodyBuffer: -1})
		req, _ := http.NewRequest("PUT", p.URL, strings.NewReader("abc")) // NewRequest sets GetBody
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		finalOutcome(t, resp)
		if r := p.requests(); len(r) != 2 || r[1].body != "abc" {
			t.Fatalf("requests %v; want the body replayed", r)
		}
	})
	t.Run("oversized body without GetBody is sent once", func(t *testing.T) {
		p := newProvider(t, status(503), status(200))
		tr, _ := newFakeTransport(Config{MaxBodyBuffer: 4})
		body := strings.Repeat("z", 100)
		req, _ := http.NewRequest("PUT", p.URL, io.NopCloser(strings.NewReader(body)))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		o := finalOutcome(t, resp)
		if !errors.Is(o.Reason, ErrBodyNotReplayable) || resp.StatusCode != 503 {
			t.Fatalf("reason %v status %d; want ErrBodyNotReplayable with the 503", o.Reason, resp.StatusCode)
		}
		if r := p.requests(); len(r) != 1 || r[0].body != body {
			t.Fatalf("provider saw %d requests; want 1 with the whole body", len(r))
		}
	})
	t.Run("failing GetBody stops the call", func(t *testing.T) {
		p := newProvider(t, status(503), status(200))
		tr, _ := newFakeTransport(Config{})
		req, _ := http.NewRequest("PUT", p.URL, strings.NewReader("abc"))
		boom := errors.New("boom")
		req.GetBody = func() (io.ReadCloser, error) { return nil, boom }
		_, err := tr.RoundTrip(req)
		if !errors.Is(err, ErrBodyNotReplayable) || !errors.Is(err, boom) {
			t.Fatalf("error %v; want ErrBodyNotReplayable wrapping the GetBody error", err)
		}
	})
}

func TestRetriedResponsesAreDrainedAndConnectionReused(t *testing.T) {
	big := strings.Repeat("x", 8<<10)
	p := newProvider(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(503)
		io.WriteString(w, big)
	}, status(200))
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	tr, _ := newFakeTransport(Config{Base: base})
	resp, err := send(t, tr, context.Background(), "GET", p.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	finalOutcome(t, resp)
	if n := p.connections(); n != 1 {
		t.Fatalf("%d connections for 2 attempts; want 1 (drained and reused)", n)
	}
}

func TestFinalResponseIsUnreadAndCarriesProblem(t *testing.T) {
	problem := `{"type":"https://example.com/probs/out-of-credit","title":"You do not have enough credit.","status":403,"detail":"Your balance is 30."}`
	p := newProvider(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(403)
		io.WriteString(w, problem)
	})
	tr, _ := newFakeTransport(Config{})
	resp, err := send(t, tr, context.Background(), "GET", p.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	o, _ := OutcomeOf(resp)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != problem {
		t.Fatalf("body %q; want the provider's body unread", b)
	}
	if o.Class != ClassBusiness || o.Problem == nil || o.Problem.Type != "https://example.com/probs/out-of-credit" ||
		o.Problem.Detail != "Your balance is 30." || o.Problem.Status != 403 {
		t.Fatalf("outcome %+v problem %+v; want business with the problem details", o, o.Problem)
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
	resp, err := send(t, tr, context.Background(), "GET", p.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	if o := finalOutcome(t, resp); o.Attempts != 2 || resp.StatusCode != 200 {
		t.Fatalf("attempts %d status %d; want 2, 200", o.Attempts, resp.StatusCode)
	}
}

func TestContextCanceledWhileWaiting(t *testing.T) {
	p := newProvider(t, status(503))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr, _ := newFakeTransport(Config{Observer: Observer{Retry: func(RetryEvent) { cancel() }}})
	_, err := send(t, tr, ctx, "GET", p.URL, "")
	var e *Error
	if !errors.Is(err, context.Canceled) || !errors.As(err, &e) || e.Attempts != 1 {
		t.Fatalf("error %v; want context.Canceled as *Error after 1 attempt", err)
	}
}

func TestObserverSeesEveryEvent(t *testing.T) {
	p := newProvider(t, status(429, "Retry-After", "1"), status(503, "Retry-After", "0"))
	var attempts []AttemptEvent
	var retries []RetryEvent
	var giveUps []GiveUpEvent
	tr, _ := newFakeTransport(Config{MaxAttempts: 3, Observer: Observer{
		Attempt: func(e AttemptEvent) { attempts = append(attempts, e) },
		Retry:   func(e RetryEvent) { retries = append(retries, e) },
		GiveUp:  func(e GiveUpEvent) { giveUps = append(giveUps, e) },
	}})
	resp, err := send(t, tr, context.Background(), "POST", p.URL, "x")
	if err != nil {
		t.Fatal(err)
	}
	finalOutcome(t, resp)
	if len(attempts) != 3 || len(retries) != 2 || len(giveUps) != 1 {
		t.Fatalf("%d attempts, %d retries, %d give-ups; want 3, 2, 1", len(attempts), len(retries), len(giveUps))
	}
	if attempts[0].StatusCode != 429 || attempts[0].Class != ClassCapacity || attempts[2].Attempt != 3 {
		t.Fatalf("attempt events %+v", attempts)
	}
	if retries[0].RetryAfter != time.Second || retries[0].Delay < time.Second || retries[1].Attempt != 3 {
		t.Fatalf("retry events %+v", retries)
	}
	if !errors.Is(giveUps[0].Outcome.Reason, ErrAttemptsExhausted) || giveUps[0].Outcome.Key == "" {
		t.Fatalf("give-up event %+v", giveUps[0])
	}
}

func TestInvalidAction(t *testing.T) {
	tr, _ := newFakeTransport(Config{})
	ctx := WithAction(context.Background(), Action{Tenant: "t", Operation: "op"})
	_, err := send(t, tr, ctx, "POST", "http://127.0.0.1:1/", "x")
	if !errors.Is(err, ErrInvalidAction) {
		t.Fatalf("error %v; want ErrInvalidAction", err)
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
	warm, err := send(t, tr, context.Background(), "GET", p.URL, "") // leaves an idle connection to reuse
	if err != nil {
		t.Fatal(err)
	}
	finalOutcome(t, warm)
	ctx := WithAction(context.Background(), Action{Tenant: "acme", Operation: "charge", Key: "order-85"})
	resp, err := send(t, tr, ctx, "POST", p.URL, "pay")
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
