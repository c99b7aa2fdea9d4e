package retrybudget

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/budget"
	"github.com/retrybudget/retrybudget/ledger"
)

// The http.RoundTripper contract at its edges: re-sends by net/http,
// deadlines, upgrades, redirects, unusual requests and bases. Each test is
// named after the rule it pins.

// rtFunc is a RoundTripper made of a function; it is not comparable.
type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestNetHTTPDoesNotResendAPostThatIsNotRepeatable(t *testing.T) {
	// Both key headers net/http takes as making a request replayable.
	for _, tc := range []struct{ body, header string }{
		{`{"amount":1}`, ""}, {"", ""}, {"", "X-Idempotency-Key"},
	} {
		body := tc.body
		t.Run(fmt.Sprintf("body %q header %q", body, tc.header), func(t *testing.T) {
			p := newProvider(t, status(200), lost, status(201))
			base := &http.Transport{}
			defer base.CloseIdleConnections()
			tr, _ := newFakeTransport(Config{Base: base, KeyHeader: tc.header})
			warm, err := send(context.Background(), t, tr, "GET", p.URL, "")
			if err != nil {
				t.Fatal(err)
			}
			finalOutcome(t, warm) // an idle connection for net/http to reuse
			_, err = send(context.Background(), t, tr, "POST", p.URL, body)
			if !errors.Is(err, ErrUncertain) {
				t.Fatalf("error %v; want ErrUncertain", err)
			}
			posts := 0
			for _, r := range p.requests() {
				if r.method == "POST" {
					posts++
				}
			}
			if posts != 1 {
				t.Fatalf("provider saw %d POSTs; want 1: net/http must not re-send it", posts)
			}
		})
	}
}

func TestBaseWithoutTraceEventsIsConservative(t *testing.T) {
	var applied int
	base := rtFunc(func(r *http.Request) (*http.Response, error) {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		applied++
		return nil, io.ErrUnexpectedEOF
	})
	tr, _ := newFakeTransport(Config{Base: base})
	req, _ := http.NewRequest("POST", "http://provider.test/charge", strings.NewReader("x"))
	_, err := tr.RoundTrip(req)
	var e *Error
	if !errors.As(err, &e) || applied != 1 || e.Class != ClassMaybeSent || !e.MaybeApplied || !errors.Is(err, ErrUncertain) {
		t.Fatalf("applied %d, error %v; want one send, maybe-sent, ErrUncertain", applied, err)
	}
}

func TestWrittenThenDialFailureIsMaybeSent(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	got := (DefaultClassifier{}).Classify(&AttemptResult{Err: dial, Traced: true, Connected: true, Written: true}).Class
	if got != ClassMaybeSent {
		t.Fatalf("class %v; want maybe-sent: the first write may have been applied", got)
	}
}

func TestLedgerDoesNotCompleteAGiveUpOnARetryableAnswer(t *testing.T) {
	p := newPayments(t, false)
	p.mu.Lock()
	p.fault = func(n int) string {
		if n <= 2 {
			return "422"
		}
		return ""
	}
	p.mu.Unlock()
	store := ledger.NewMemory(ledger.MemoryConfig{})
	tr, _ := newFakeTransport(Config{Ledger: LedgerConfig{Store: store}, MaxAttempts: 2, Classifier: hinting{hint: HintRetry}})
	resp, err := chargeTo(t, tr, p.URL, order, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, o := readAll(t, resp); !errors.Is(o.Reason, ErrAttemptsExhausted) {
		t.Fatalf("reason %v; want attempts exhausted", o.Reason)
	}
	if r := stateOf(t, store, order); r.State != ledger.StateFailed {
		t.Fatalf("state %v; want failed: a retryable answer given up on is not the action's outcome", r.State)
	}
	resp, err = chargeTo(t, tr, p.URL, order, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, o := readAll(t, resp); o.Replayed || resp.StatusCode != 201 {
		t.Fatalf("resubmit: status %d replayed %v; want 201 sent", resp.StatusCode, o.Replayed)
	}
}

func TestLedgerSettleDoesNotWaitForASlowBody(t *testing.T) {
	// Real time is the point: the body stalls after its first bytes.
	release := make(chan struct{})
	p := newProvider(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(201)
		io.WriteString(w, "data: 1\n")
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, "data: 2\n")
	})
	store := ledger.NewMemory(ledger.MemoryConfig{})
	tr := New(Config{Ledger: LedgerConfig{Store: store}})
	start := time.Now()
	resp, err := send(WithAction(context.Background(), order), t, tr, "POST", p.URL, "x")
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > settleWait+2*time.Second {
		close(release)
		t.Fatalf("RoundTrip took %v; want about %v at most", took, settleWait)
	}
	close(release)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r := stateOf(t, store, order)
	if string(body) != "data: 1\ndata: 2\n" || r.State != ledger.StateCompleted || r.Outcome == nil || !r.Outcome.BodyOmitted {
		t.Fatalf("body %q, state %v, outcome %+v; want the whole body and a completed record without it", body, r.State, r.Outcome)
	}
}

// slowStore delays Reserve, as a slow Redis would.
type slowStore struct {
	ledger.Store
	delay time.Duration
}

func (s slowStore) Reserve(ctx context.Context, r ledger.ReserveRequest) (ledger.Reservation, error) {
	time.Sleep(s.delay)
	return s.Store.Reserve(ctx, r)
}

func TestNoAttemptStartsAfterTheDeadline(t *testing.T) {
	p := newProvider(t, status(201))
	store := slowStore{Store: ledger.NewMemory(ledger.MemoryConfig{}), delay: 100 * time.Millisecond}
	tr := New(Config{Ledger: LedgerConfig{Store: store}, Deadline: 50 * time.Millisecond, AttemptTimeout: time.Hour})
	_, err := send(WithAction(context.Background(), order), t, tr, "POST", p.URL, "x")
	if !errors.Is(err, ErrDeadline) || len(p.requests()) != 0 {
		t.Fatalf("error %v, %d sent; want ErrDeadline and nothing sent", err, len(p.requests()))
	}
}

func TestRequestsThatCannotBeSentAreRefused(t *testing.T) {
	body := &closeRecorder{Reader: strings.NewReader("x")}
	_, err := New(Config{}).RoundTrip(&http.Request{Method: "POST", Header: http.Header{}, Body: body})
	if !errors.Is(err, errNilURL) || !body.closed {
		t.Fatalf("nil URL: error %v, body closed %v; want errNilURL and the body closed", err, body.closed)
	}
	req, _ := http.NewRequest("GET", "http://provider.test/", nil)
	if _, err := (&Transport{}).RoundTrip(req); !errors.Is(err, errNotNew) {
		t.Fatalf("zero Transport: error %v; want errNotNew", err)
	}
}

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

func TestCloseIdleConnectionsWithAnUncomparableBase(t *testing.T) {
	base := rtFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("unused") })
	tr := New(Config{Base: base, Routes: []Route{{Host: "a.example"}}})
	tr.CloseIdleConnections() // must not panic
}

func TestNilHeaderIsAnEmptyHeader(t *testing.T) {
	p := newProvider(t, status(200))
	u, _ := url.Parse(p.URL)
	tr, _ := newFakeTransport(Config{})
	resp, err := tr.RoundTrip(&http.Request{Method: "GET", URL: u})
	if err != nil {
		t.Fatal(err)
	}
	if o := finalOutcome(t, resp); o.Attempts != 1 || resp.StatusCode != 200 {
		t.Fatalf("attempts %d status %d; want 1, 200", o.Attempts, resp.StatusCode)
	}
}

func TestAttemptContextIsReleasedForAnUpgrade(t *testing.T) {
	base := rtFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 101, Header: http.Header{}, Request: r,
			Body: struct {
				io.ReadWriteCloser
			}{&rwc{}}}, nil
	})
	tr, _ := newFakeTransport(Config{Base: base, AttemptTimeout: time.Hour})
	req, _ := http.NewRequest("GET", "http://provider.test/ws", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := resp.Body.(io.ReadWriteCloser); !ok {
		t.Fatal("the 101 body lost its io.ReadWriteCloser type")
	}
	if resp.Request.Context().Err() == nil {
		t.Fatal("the attempt's context is still alive after the upgrade")
	}
}

type rwc struct{ bytes.Buffer }

func (*rwc) Close() error { return nil }

func TestRedirectHopsDoNotConflictWithTheAction(t *testing.T) {
	var mu sync.Mutex
	hops := map[string]int{}
	p := newProvider(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hops[r.URL.Path]++
		mu.Unlock()
		if r.URL.Path == "/v1/charge" {
			http.Redirect(w, r, "/v2/charge", http.StatusTemporaryRedirect)
			return
		}
		w.WriteHeader(201)
	})
	store := ledger.NewMemory(ledger.MemoryConfig{})
	client := &http.Client{Transport: New(Config{Ledger: LedgerConfig{Store: store}})}
	req, _ := http.NewRequestWithContext(WithAction(context.Background(), order), "POST", p.URL+"/v1/charge", strings.NewReader("x"))
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("redirected action: %v; want the final answer", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 || hops["/v1/charge"] != 1 || hops["/v2/charge"] != 1 {
		t.Fatalf("status %d hops %v; want 201 after one hop each", resp.StatusCode, hops)
	}
}

// stolenStore answers every lease renewal with ErrNotOwner, as a store does
// once another worker has taken the action over.
type stolenStore struct{ *ledger.Memory }

func (stolenStore) Renew(context.Context, ledger.Key, int64, time.Duration) error {
	return ledger.ErrNotOwner
}

func TestCallStopsRetryingWhenItsLeaseIsTaken(t *testing.T) {
	// Real time: the lease keeper renews every millisecond, the backoff
	// waits 20 ms, so the loss is seen long before the attempts run out.
	p := newProvider(t, status(503))
	store := stolenStore{ledger.NewMemory(ledger.MemoryConfig{})}
	tr := New(Config{Ledger: LedgerConfig{Store: store, Lease: 3 * time.Millisecond}, MaxAttempts: 10,
		BaseDelay: 20 * time.Millisecond, Jitter: -1, Budget: budget.Unlimited{}})
	resp, err := send(WithAction(context.Background(), order), t, tr, "POST", p.URL, "x")
	// The loss is seen after an attempt (the 503 is returned) or right
	// before the next one (an *Error: the 503 was drained for the retry).
	var o Outcome
	if e, ok := errors.AsType[*Error](err); ok {
		o = e.Outcome
	} else if err != nil {
		t.Fatal(err)
	} else {
		_, o = readAll(t, resp)
	}
	if !errors.Is(o.Reason, ErrPending) || o.Attempts >= 10 {
		t.Fatalf("reason %v after %d attempts; want ErrPending before the attempts ran out", o.Reason, o.Attempts)
	}
}
