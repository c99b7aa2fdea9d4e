package retrybudget

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// Edge rules of the call loop: a caller back at the RetryAt it was told, a
// negative MaxBodyBuffer, the Reconciler's deadline, and refused calls
// reaching CaptureOutcome.

// TestCallerBackAtRetryAtIsSentNotAnsweredFromTheGiveUp: a give-up was
// remembered for SDK re-sends for 30 s whatever its RetryAt, so a caller
// that set its own key and came back at the RetryAt it was told (here the
// provider's Retry-After, past MaxWait), as the README tells it to, got
// the old give-up again and nothing was sent.
func TestCallerBackAtRetryAtIsSentNotAnsweredFromTheGiveUp(t *testing.T) {
	p := newProvider(t, status(429, "Retry-After", "60"), status(200))
	tr, clk := newFakeTransport(Config{MaxWait: time.Second}) // the provider asks for more than MaxWait
	h := http.Header{"Idempotency-Key": {"caller-key-1"}}
	resp, err := post(context.Background(), t, tr, p.URL, h)
	if err != nil {
		t.Fatal(err)
	}
	first := finalOutcome(t, resp)
	if !errors.Is(first.Reason, ErrWaitTooLong) || first.RetryAt.IsZero() {
		t.Fatalf("give-up %+v; want ErrWaitTooLong with a RetryAt", first)
	}
	if err := clk.Sleep(context.Background(), first.RetryAt.Sub(clk.Now())); err != nil { // the caller waits until RetryAt
		t.Fatal(err)
	}
	resp, err = post(context.Background(), t, tr, p.URL, h)
	if err != nil {
		t.Fatal(err)
	}
	o := finalOutcome(t, resp)
	if n := len(p.requests()); n != 2 || o.Repeated || resp.StatusCode != 200 {
		t.Fatalf("%d arrivals, status %d, repeated %v; want the call sent again at RetryAt", n, resp.StatusCode, o.Repeated)
	}
}

// TestNegativeMaxBodyBufferStillFingerprintsForTheLedger: with
// MaxBodyBuffer < 0 ("never buffer") and a ledger, every call with a body
// was refused (ErrBodyNotReplayable) even with GetBody, because the
// fingerprint read was limited to 0 bytes; the stored answer was always
// omitted too.
func TestNegativeMaxBodyBufferStillFingerprintsForTheLedger(t *testing.T) {
	p := newProvider(t, status(201))
	store := ledger.NewMemory(ledger.MemoryConfig{})
	tr := New(Config{MaxBodyBuffer: -1, Ledger: LedgerConfig{Store: store}})
	a := Action{Operation: "charge", Key: "order-neg"}
	for range 2 {
		req, _ := http.NewRequestWithContext(WithAction(context.Background(), a), http.MethodPost, p.URL, bytes.NewReader([]byte("amount=1")))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		finalOutcome(t, resp)
	}
	r, err := store.Get(context.Background(), a)
	if err != nil || r.State != ledger.StateCompleted || r.Outcome.BodyOmitted {
		t.Fatalf("record %+v, %v; want completed with its answer stored", r, err)
	}
	if n := len(p.requests()); n != 1 {
		t.Fatalf("%d arrivals; want 1, then a replay", n)
	}
}

// TestReconcilerIsBoundedByTheDeadline: the Reconciler ran with the
// caller's context as is, so Config.Deadline did not bound it, and a hung
// one held the call (and, renewing the lease, the action).
func TestReconcilerIsBoundedByTheDeadline(t *testing.T) {
	p := newProvider(t, status(201))
	var skew atomic.Int64 // how far the store's clock runs ahead of time.Now
	store := ledger.NewMemory(ledger.MemoryConfig{Now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }})
	a := Action{Operation: "charge", Key: "order-rec"}
	u, _ := url.Parse(p.URL)
	fp := ledger.Fingerprint(http.MethodPost, u, nil, nil, []byte("x"))
	if _, err := store.Reserve(context.Background(), ledger.ReserveRequest{Key: a, Fingerprint: fp, Owner: "dead", Lease: time.Second}); err != nil {
		t.Fatal(err)
	}
	skew.Store(int64(2 * time.Second)) // the dead owner's lease has run out
	var called, gotDeadline bool
	hung := func(ctx context.Context, rec ledger.Record) (ledger.Resolution, error) {
		called = true
		_, gotDeadline = ctx.Deadline()
		<-ctx.Done() // a Reconciler that waits on its provider until told to stop
		return ledger.Resolution{}, ctx.Err()
	}
	tr := New(Config{Deadline: 200 * time.Millisecond, Ledger: LedgerConfig{Store: store, Reconciler: hung}})
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequestWithContext(WithAction(context.Background(), a), http.MethodPost, p.URL, bytes.NewReader([]byte("x")))
		if resp, err := tr.RoundTrip(req); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the call is still held by a hung Reconciler")
	}
	if !called || !gotDeadline {
		t.Fatalf("Reconciler called %v, its context with a deadline %v; want both", called, gotDeadline)
	}
	if n := len(p.requests()); n != 0 {
		t.Fatalf("%d arrivals; an unanswered Reconciler leaves the action uncertain, unsent", n)
	}
}

// TestRefusedCallsReachCaptureOutcome: calls refused before any attempt
// (an Action with an empty key) returned an *Error but never reached a
// CaptureOutcome record.
func TestRefusedCallsReachCaptureOutcome(t *testing.T) {
	ctx, out := CaptureOutcome(WithAction(context.Background(), Action{Operation: "charge"}))
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:1/", nil)
	_, err := New(Config{}).RoundTrip(req)
	o, ok := out.Last()
	if !errors.Is(err, ErrInvalidAction) || !ok || !errors.Is(o.Reason, ErrInvalidAction) {
		t.Fatalf("err %v, captured %+v (%v); want ErrInvalidAction in both", err, o, ok)
	}
}
