package retrybudget

// Hostile providers: Retry-After values that are huge, negative,
// garbage or in the past; endless and stalled bodies; headers trickled a
// byte at a time; servers that accept and never answer. Every case must
// return within its bound, leak no goroutine (TestMain runs goleak) and end
// with an error or Outcome the caller can act on.
//
// Retry-After cases run on the fake clock: what matters is what the
// Transport decides to sleep. Cases about timeouts run on the real clock
// with bounds of tens to hundreds of milliseconds, and are checked against
// the bound plus hostileSlack so that a loaded two-core machine passes.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestHostileRetryAfter(t *testing.T) {
	const base = 10 * time.Millisecond // Jitter off: an absent Retry-After sleeps exactly this
	now := time.Now()
	tests := []struct {
		name  string
		code  int
		value string
		// obeyed is false when the value must be treated as absent: one
		// backoff sleep, then the retry succeeds.
		obeyed bool
		// For an obeyed value beyond MaxWait: the call ends at once with
		// ErrWaitTooLong and RetryAt at least this far ahead.
		retryIn time.Duration
	}{
		{"delta beyond a century", 503, "1000000000000", false, 0},
		{"delta overflowing int64", 429, "99999999999999999999999999999", false, 0},
		{"ten thousand digits", 503, strings.Repeat("9", 10000), false, 0},
		{"negative", 429, "-5", false, 0},
		{"negative huge", 503, "-1000000000000", false, 0},
		{"fraction", 503, "1.5", false, 0},
		{"with a unit", 429, "120s", false, 0},
		{"hex", 429, "0x10", false, 0},
		{"garbage", 503, "soon, please", false, 0},
		{"control bytes", 503, "\x01\x02", false, 0},
		{"empty", 429, "", false, 0},
		{"date in the past", 503, "Sun, 06 Nov 1994 08:49:37 GMT", false, 0},
		{"epoch in asctime", 429, "Thu Jan  1 00:00:00 1970", false, 0},
		{"zero", 429, "0", false, 0},
		{"a day", 429, "86400", true, 24 * time.Hour},
		{"just under a century", 503, "3153600000", true, 99 * 365 * 24 * time.Hour},
		// An HTTP-date beyond the century bound is refused, like delta-seconds.
		{"year 9999", 503, "Fri, 31 Dec 9999 23:59:59 GMT", false, 0},
		{"a year from now", 429, now.AddDate(1, 0, 0).UTC().Format(http.TimeFormat), true, 364 * 24 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProvider(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Retry-After"] = []string{tt.value}
				w.WriteHeader(tt.code)
			}, status(200))
			b, _ := hostileBase(t)
			tr, fc := newFakeTransport(Config{Base: b, BaseDelay: base, Jitter: -1})
			start, wall := fc.Now(), time.Now()
			resp, err := send(context.Background(), t, tr, "GET", p.URL, "")
			if err != nil {
				t.Fatalf("RoundTrip error %v; want a response", err)
			}
			o := finalOutcome(t, resp)
			elapsedWithin(t, "the call", time.Since(wall), 0)
			if !tt.obeyed {
				if o.Reason != nil || o.Attempts != 2 || resp.StatusCode != 200 {
					t.Fatalf("reason %v, %d attempts, status %d; want the value ignored and one retry to a 200",
						o.Reason, o.Attempts, resp.StatusCode)
				}
				if s := fc.Sleeps(); len(s) != 1 || s[0] != base {
					t.Fatalf("sleeps %v; want one backoff sleep of %v", s, base)
				}
				return
			}
			if !errors.Is(o.Reason, ErrWaitTooLong) || o.Attempts != 1 || resp.StatusCode != tt.code {
				t.Fatalf("reason %v, %d attempts, status %d; want ErrWaitTooLong after 1 attempt with the %d",
					o.Reason, o.Attempts, resp.StatusCode, tt.code)
			}
			if s := fc.Sleeps(); len(s) != 0 {
				t.Fatalf("slept %v; want no sleep for a wait beyond MaxWait", s)
			}
			if o.RetryAt.Sub(start) < tt.retryIn {
				t.Fatalf("RetryAt %v is %v ahead; want at least %v", o.RetryAt, o.RetryAt.Sub(start), tt.retryIn)
			}
			var e *Error
			if !errors.As(o.Err(), &e) || !errors.Is(e, ErrWaitTooLong) || !e.RetryAt.Equal(o.RetryAt) {
				t.Fatalf("Outcome.Err() = %v; want an *Error matching ErrWaitTooLong with the RetryAt", o.Err())
			}
			if n := len(p.requests()); n != 1 {
				t.Fatalf("provider saw %d requests; want 1", n)
			}
		})
	}
}

func TestHostileEndlessBodyOnARetriedResponseIsDrainedBounded(t *testing.T) {
	const maxDrain = 16 << 10
	// What the client may read beyond MaxDrain: the status line and
	// headers, chunk framing and one read-ahead buffer of net/http.
	const overhead = 16 << 10
	tests := []struct {
		name string
		eb   *endlessBody
		// limit is the most the client may read on the first connection.
		limit int64
	}{
		{"503", newEndlessBody(503), maxDrain + overhead},
		{"429 with Retry-After 0", newEndlessBody(429, "Retry-After", "0"), maxDrain + overhead},
		// Problem details are peeked (at most 64 KiB + 1) before the drain,
		// which then reads the peeked bytes first.
		{"503 problem+json", newEndlessBody(503, "Content-Type", "application/problem+json"), maxProblemBytes + 1 + overhead},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProvider(t, tt.eb.serve, status(200))
			b, wire := hostileBase(t)
			tr, _ := newFakeTransport(Config{Base: b, MaxDrain: maxDrain, BaseDelay: time.Millisecond})
			wall := time.Now()
			resp, err := send(context.Background(), t, tr, "GET", p.URL, "")
			if err != nil {
				t.Fatal(err)
			}
			o := finalOutcome(t, resp)
			elapsedWithin(t, "the call", time.Since(wall), 0)
			if o.Attempts != 2 || resp.StatusCode != 200 || o.Reason != nil {
				t.Fatalf("%d attempts, status %d, reason %v; want the retry to reach the 200", o.Attempts, resp.StatusCode, o.Reason)
			}
			tt.eb.waitEnded(t, hostileSlack)
			read := wire.read()
			if len(read) != 2 || p.connections() != 2 {
				t.Fatalf("%d client and %d server connections; want 2: the rest of the body is dropped with its connection",
					len(read), p.connections())
			}
			if read[0] > tt.limit {
				t.Fatalf("client read %d bytes of the endless response; want at most %d (MaxDrain %d)", read[0], tt.limit, maxDrain)
			}
			// The server writes into socket buffers the client never reads;
			// the point is that it stopped, having written a finite amount.
			t.Logf("client read %d bytes; server wrote %d before the connection broke", read[0], tt.eb.written.Load())
		})
	}
}

func TestHostileEndlessBodyOnTheFinalResponseIsTheCallers(t *testing.T) {
	for _, code := range []int{200, 503} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			eb := newEndlessBody(code)
			p := newProvider(t, eb.serve)
			b, _ := hostileBase(t)
			// One attempt: the endless response is the final one.
			tr := New(Config{Base: b, MaxAttempts: -1})
			wall := time.Now()
			resp, err := send(context.Background(), t, tr, "GET", p.URL, "")
			if err != nil {
				t.Fatal(err)
			}
			elapsedWithin(t, "RoundTrip", time.Since(wall), 0)
			o, ok := OutcomeOf(resp)
			if !ok || o.Attempts != 1 || resp.StatusCode != code {
				t.Fatalf("outcome %+v (%v), status %d; want 1 attempt with the %d", o, ok, resp.StatusCode, code)
			}
			if code != 200 && !errors.Is(o.Reason, ErrAttemptsExhausted) {
				t.Fatalf("reason %v; want ErrAttemptsExhausted", o.Reason)
			}
			// The body is unread: the caller gets it from its first byte.
			head := make([]byte, 4<<10)
			if _, err := io.ReadFull(resp.Body, head); err != nil || head[0] != 'x' {
				t.Fatalf("reading the body: %v; want the provider's bytes", err)
			}
			wall = time.Now()
			resp.Body.Close()
			elapsedWithin(t, "Close", time.Since(wall), 0)
			eb.waitEnded(t, hostileSlack)
		})
	}
}

func TestHostileStalledBody(t *testing.T) {
	const attemptTimeout = 100 * time.Millisecond
	const deadline = 300 * time.Millisecond
	t.Run("final 200: RoundTrip returns at the headers, the caller's read ends at its deadline", func(t *testing.T) {
		const deadline = time.Second // RoundTrip must return well before it
		p := newProvider(t, stalledBody(t, 200))
		b, _ := hostileBase(t)
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		wall := time.Now()
		resp, err := send(ctx, t, New(Config{Base: b}), "GET", p.URL, "")
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(wall); d >= deadline {
			t.Fatalf("RoundTrip took %v; want it to return at the headers, before the %v deadline", d, deadline)
		}
		got, err := io.ReadAll(resp.Body)
		elapsedWithin(t, "reading the stalled body", time.Since(wall), deadline)
		if string(got) != "{" || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("body %q, read error %v; want %q then context.DeadlineExceeded", got, err, "{")
		}
		wall = time.Now()
		resp.Body.Close()
		elapsedWithin(t, "Close", time.Since(wall), 0)
	})
	t.Run("final 200: Close returns at once without reading", func(t *testing.T) {
		p := newProvider(t, stalledBody(t, 200))
		b, _ := hostileBase(t)
		resp, err := send(context.Background(), t, New(Config{Base: b}), "GET", p.URL, "")
		if err != nil {
			t.Fatal(err)
		}
		wall := time.Now()
		resp.Body.Close()
		elapsedWithin(t, "Close", time.Since(wall), 0)
	})
	t.Run("retried 503, AttemptTimeout: every drain is cut, the last 503 is returned", func(t *testing.T) {
		p := newProvider(t, stalledBody(t, 503))
		b, _ := hostileBase(t)
		tr := New(Config{Base: b, MaxAttempts: 3, AttemptTimeout: attemptTimeout, BaseDelay: time.Millisecond})
		wall := time.Now()
		resp, err := send(context.Background(), t, tr, "GET", p.URL, "")
		if err != nil {
			t.Fatal(err)
		}
		o, _ := OutcomeOf(resp)
		elapsedWithin(t, "the call", time.Since(wall), 3*attemptTimeout)
		if o.Attempts != 3 || !errors.Is(o.Reason, ErrAttemptsExhausted) || resp.StatusCode != 503 {
			t.Fatalf("%d attempts, reason %v, status %d; want 3, ErrAttemptsExhausted, 503", o.Attempts, o.Reason, resp.StatusCode)
		}
		// The last attempt's timeout still bounds the caller's read.
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		elapsedWithin(t, "the call and reading the last body", time.Since(wall), 3*attemptTimeout)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("read error %v; want context.DeadlineExceeded", err)
		}
	})
	t.Run("retried 503, context deadline: the drain is cut, the wait cannot fit", func(t *testing.T) {
		p := newProvider(t, stalledBody(t, 503))
		b, _ := hostileBase(t)
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		wall := time.Now()
		resp, err := send(ctx, t, New(Config{Base: b, BaseDelay: time.Second}), "GET", p.URL, "")
		elapsedWithin(t, "the call", time.Since(wall), deadline)
		if err != nil {
			t.Fatalf("error %v; want the 503 with ErrDeadline", err)
		}
		o, _ := OutcomeOf(resp)
		resp.Body.Close()
		if !errors.Is(o.Reason, ErrDeadline) || o.Attempts != 1 || resp.StatusCode != 503 {
			t.Fatalf("reason %v, %d attempts, status %d; want ErrDeadline after 1 attempt with the 503", o.Reason, o.Attempts, resp.StatusCode)
		}
	})
	t.Run("final problem+json, AttemptTimeout: the peek is cut, the response is returned", func(t *testing.T) {
		p := newProvider(t, stalledBody(t, 400, "Content-Type", "application/problem+json"))
		b, _ := hostileBase(t)
		wall := time.Now()
		resp, err := send(context.Background(), t, New(Config{Base: b, AttemptTimeout: attemptTimeout}), "GET", p.URL, "")
		if err != nil {
			t.Fatal(err)
		}
		o, _ := OutcomeOf(resp)
		elapsedWithin(t, "the call", time.Since(wall), attemptTimeout)
		if !errors.Is(o.Reason, ErrRejected) || o.Problem != nil || resp.StatusCode != 400 {
			t.Fatalf("reason %v, problem %+v, status %d; want ErrRejected, no problem, 400", o.Reason, o.Problem, resp.StatusCode)
		}
		// The byte peeked before the stall comes first, then the error.
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != "{" || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("body %q, error %v; want %q then context.DeadlineExceeded", got, err, "{")
		}
	})
}

func TestHostileServersBelowHTTP(t *testing.T) {
	const attemptTimeout = 100 * time.Millisecond
	const deadline = 300 * time.Millisecond
	trickled := trickle("HTTP/1.1 200 OK\r\nX-Slow: ", 10*time.Millisecond, true)
	early := func(c net.Conn, gone <-chan struct{}) {
		for {
			if _, err := io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"); err != nil {
				return
			}
			select {
			case <-gone:
				return
			default:
			}
		}
	}
	charge := WithAction(context.Background(), Action{Tenant: "acme", Operation: "charge", Key: "order-7"})
	tests := []struct {
		name    string
		handle  func(net.Conn, <-chan struct{})
		cfg     Config
		ctx     context.Context // nil means context.Background()
		ctxWait time.Duration   // context deadline; 0 means none
		method  string
		// The call must end within bound with an *Error matching reason
		// and cause, each when set, after attempts attempts (0: any).
		bound    time.Duration
		reason   error
		cause    error
		attempts int
		// maxHeader, when set, is the base's MaxResponseHeaderBytes.
		maxHeader int64
	}{
		{"trickled headers, AttemptTimeout, GET retried", trickled, Config{AttemptTimeout: attemptTimeout, MaxAttempts: 3},
			nil, 0, "GET", 3 * attemptTimeout, ErrAttemptsExhausted, context.DeadlineExceeded, 3, 0},
		{"trickled headers, AttemptTimeout, unkeyed POST not repeated", trickled, Config{AttemptTimeout: attemptTimeout, MaxAttempts: 3},
			nil, 0, "POST", attemptTimeout, ErrUncertain, context.DeadlineExceeded, 1, 0},
		{"trickled headers, AttemptTimeout, POST with an Action retried", trickled, Config{AttemptTimeout: attemptTimeout, MaxAttempts: 3},
			charge, 0, "POST", 3 * attemptTimeout, ErrAttemptsExhausted, context.DeadlineExceeded, 3, 0},
		{"trickled headers, context deadline", trickled, Config{},
			nil, deadline, "GET", deadline, context.DeadlineExceeded, nil, 1, 0},
		{"never answers, context deadline", silent, Config{},
			nil, deadline, "GET", deadline, context.DeadlineExceeded, nil, 1, 0},
		{"never answers, Config.Deadline, GET", silent, Config{Deadline: deadline},
			nil, 0, "GET", deadline, ErrDeadline, context.DeadlineExceeded, 1, 0},
		{"never answers, Config.Deadline, unkeyed POST", silent, Config{Deadline: deadline},
			nil, 0, "POST", deadline, ErrUncertain, context.DeadlineExceeded, 1, 0},
		{"never answers, AttemptTimeout within a context deadline", silent, Config{AttemptTimeout: attemptTimeout},
			nil, 2 * time.Second, "GET", DefaultMaxAttempts * attemptTimeout, ErrAttemptsExhausted, context.DeadlineExceeded, DefaultMaxAttempts, 0},
		{"hangs up after reading the request", hangUp, Config{MaxAttempts: 3},
			nil, 0, "GET", 0, ErrAttemptsExhausted, nil, 3, 0},
		{"hangs up after reading the request, unkeyed POST", hangUp, Config{MaxAttempts: 3},
			nil, 0, "POST", 0, ErrUncertain, nil, 1, 0},
		{"not HTTP", reply("SSH-2.0-OpenSSH_9.6\r\n"), Config{MaxAttempts: 3},
			nil, 0, "GET", 0, ErrAttemptsExhausted, nil, 3, 0},
		// net/http reads 1xx responses until their headers reach
		// MaxResponseHeaderBytes (10 MiB by default), so only the deadline
		// bounds the first of these; which error wins depends on the machine.
		{"endless 103 Early Hints, context deadline", early, Config{MaxAttempts: 3},
			nil, deadline, "GET", deadline, nil, nil, 0, 0},
		{"endless 103 Early Hints, 64 KiB header limit", early, Config{MaxAttempts: 3},
			nil, 0, "GET", 0, ErrAttemptsExhausted, nil, 3, 64 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newRawServer(t, tt.handle)
			b, _ := hostileBase(t)
			b.MaxResponseHeaderBytes = tt.maxHeader
			cfg := tt.cfg
			cfg.Base, cfg.BaseDelay = b, 10*time.Millisecond
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			if tt.ctxWait > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.ctxWait)
				defer cancel()
			}
			wall := time.Now()
			resp, err := send(ctx, t, New(cfg), tt.method, s.URL(), "x")
			elapsed := time.Since(wall)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("RoundTrip returned a %d; want an error", resp.StatusCode)
			}
			elapsedWithin(t, "the call", elapsed, tt.bound)
			e := asError(t, err)
			t.Logf("after %v: %v", elapsed.Round(time.Millisecond), err)
			if tt.reason != nil && !errors.Is(err, tt.reason) {
				t.Fatalf("error %v; want %v", err, tt.reason)
			}
			if tt.cause != nil && !errors.Is(e.Cause, tt.cause) {
				t.Fatalf("cause %v; want %v", e.Cause, tt.cause)
			}
			if tt.attempts != 0 && (e.Attempts != tt.attempts || s.accepted() != tt.attempts) {
				t.Fatalf("%d attempts, %d connections; want %d", e.Attempts, s.accepted(), tt.attempts)
			}
			// Every one of these servers received the request.
			if e.Class != ClassMaybeSent || !e.MaybeApplied || e.StatusCode != 0 {
				t.Fatalf("class %v, maybe applied %v, status %d; want maybe-sent, true, 0", e.Class, e.MaybeApplied, e.StatusCode)
			}
			s.waitGone(t, hostileSlack)
		})
	}
}

// TestHostileSlowBodyDoesNotHoldTheCall pins a hole in "every case returns
// within its bound": a body the Transport reads for its own purposes (the
// drain before a retry, the problem-details peek) is bounded in bytes but
// not in time. A provider that sends the headers at once and the body a
// byte at a time, or not at all, keeps RoundTrip inside discard or
// peekProblem until the context, Config.Deadline or AttemptTimeout ends it;
// with none of them, for MaxDrain (or 64 KiB) ticks, or forever. The caller
// loses the backoff-and-retry it was promised and, for a final problem
// response, the headers that net/http alone would have handed it at once.
func TestHostileSlowBodyDoesNotHoldTheCall(t *testing.T) {
	// Regression: the drain of a retried response and the problem+json
	// peek had no time bound, so a trickled or stalled body held RoundTrip
	// until the context deadline.
	const ctxWait = 5 * time.Second
	const bound = 2 * time.Second // well under ctxWait: any time bound on the drain passes
	problem := []string{"Content-Type", "application/problem+json"}
	tests := []struct {
		name     string
		first    step
		status   int
		reason   error
		attempts int
	}{
		{"retried 503 whose body trickles", trickledBody(t, 503, 50*time.Millisecond), 200, nil, 2},
		{"retried 503 problem+json whose body stalls", stalledBody(t, 503, problem...), 200, nil, 2},
		{"final 400 problem+json whose body stalls", stalledBody(t, 400, problem...), 400, ErrRejected, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProvider(t, tt.first, status(200))
			b, _ := hostileBase(t)
			ctx, cancel := context.WithTimeout(context.Background(), ctxWait)
			defer cancel()
			wall := time.Now()
			resp, err := send(ctx, t, New(Config{Base: b, BaseDelay: 10 * time.Millisecond}), "GET", p.URL, "")
			elapsed := time.Since(wall)
			if err != nil {
				t.Fatalf("after %v: %v; want the provider's %d", elapsed, err, tt.status)
			}
			o, _ := OutcomeOf(resp)
			resp.Body.Close()
			if elapsed > bound {
				t.Fatalf("RoundTrip took %v (deadline %v); want within %v", elapsed, ctxWait, bound)
			}
			if resp.StatusCode != tt.status || o.Attempts != tt.attempts || !errors.Is(o.Reason, tt.reason) {
				t.Fatalf("status %d, %d attempts, reason %v; want %d, %d, %v",
					resp.StatusCode, o.Attempts, o.Reason, tt.status, tt.attempts, tt.reason)
			}
		})
	}
}
