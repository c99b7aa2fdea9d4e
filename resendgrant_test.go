package retrybudget

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/limiter"
)

// A resend grant is an action an earlier call may already have applied.
// When the call that holds it ends before its own attempt (here the
// limiter is down, fail-closed), the record must stay "maybe applied"
// (uncertain), never become "failed, no effect": the next run would then
// send it as new work without asking anyone. Found by TestSimulation
// (Memory seed 19518).
func TestResendThatEndsBeforeSendingStaysMaybeApplied(t *testing.T) {
	p := newProvider(t, status(201))
	// A dead owner marked it sending (it may have been applied), then its
	// lease ran out. Its request was the one sent below.
	store, act, _, later := markedBefore(t, p, "dead")
	later(time.Minute)

	lim := &scriptedLimiter{err: fmt.Errorf("%w: redis down", limiter.ErrUnavailable)}
	tr, _ := newFakeTransport(Config{KeysHonoured: true, Limiter: lim, Ledger: LedgerConfig{Store: store}})
	_, err := send(WithAction(context.Background(), act), t, tr, "POST", p.URL, "x")
	heldUnsent(t, err, store, act, p)
}

// An SDK's numbered re-send (openai-go's X-Stainless-Retry-Count) that
// ends before sending anything, here because its deadline has passed,
// reports that the call may have been applied: the SDK's earlier sends of
// it, no longer remembered here, may have been. Found by TestSimulation
// (Memory seed 16051).
func TestNumberedResendEndingUnsentIsMaybeApplied(t *testing.T) {
	p := newProvider(t, status(201))
	tr, fc := newFakeTransport(Config{})
	ctx, cancel := context.WithDeadline(context.Background(), fc.Now().Add(-time.Second))
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", p.URL, strings.NewReader("x"))
	req.Header.Set("X-Stainless-Retry-Count", "2")
	_, err := tr.RoundTrip(req)
	var e *Error
	if !errors.As(err, &e) || e.Attempts != 0 || !e.MaybeApplied {
		t.Fatalf("error %v; want no attempt, maybe applied", err)
	}
	if n := len(p.requests()); n != 0 {
		t.Fatalf("provider got %d requests; want none", n)
	}
}

// A numbered re-send that owns its action tells from the ledger what the
// call without one must presume: the ledger granted it as never sent, and
// every earlier send under the Action went through the ledger. Ending
// before its own attempt (here the limiter is down), it records the action
// failed without an effect, not uncertain: nothing reached the provider,
// so nobody should be asked to settle it. Found by TestSimulation (Redis
// seed 25).
func TestNumberedResendThatOwnsItsActionEndsUnsentWithoutEffect(t *testing.T) {
	p := newProvider(t, status(201))
	store := ledger.NewMemory(ledger.MemoryConfig{})
	act := Action{Tenant: "acme", Operation: "charge", Key: "o-1"}
	lim := &scriptedLimiter{err: fmt.Errorf("%w: redis down", limiter.ErrUnavailable)}
	tr, _ := newFakeTransport(Config{Limiter: lim, Ledger: LedgerConfig{Store: store}})
	req, _ := http.NewRequestWithContext(WithAction(context.Background(), act), "POST", p.URL, strings.NewReader("x"))
	req.Header.Set("X-Stainless-Retry-Count", "2")
	_, err := tr.RoundTrip(req)
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrLimiter) || e.MaybeApplied {
		t.Fatalf("error %v; want ErrLimiter, not maybe applied", err)
	}
	rec, err := store.Get(context.Background(), act)
	if err != nil || rec.State != ledger.StateFailed {
		t.Fatalf("record %v, %v; want failed (no effect possible), not uncertain", rec.State, err)
	}
	if n := len(p.requests()); n != 0 {
		t.Fatalf("provider got %d requests; want none", n)
	}
}

// A Reconciler's "not found" for an action sent earlier, where keys are
// honoured, lets the call send it again under its key at once (the settle
// time does not hold it); should the call then end before its own attempt
// (here the limiter is down), the record stays "maybe applied": the
// earlier request may still be applied, as a Reconciler that cannot see
// requests in flight does not know. Found by TestSimulation (Redis seed
// 94028241: a late-applying provider, recorded "failed, no effect").
func TestReconciledNotFoundThatEndsBeforeSendingStaysMaybeApplied(t *testing.T) {
	p := newProvider(t, status(201))
	store, act, token, _ := markedBefore(t, p, "first")
	if err := store.Fail(context.Background(), act, token, ledger.Failure{EffectPossible: true, Reason: "deadline"}); err != nil {
		t.Fatal(err)
	}
	notFound := func(context.Context, ledger.Record) (ledger.Resolution, error) {
		return ledger.Resolution{State: ledger.StateFailed, Reason: "not found"}, nil
	}
	lim := &scriptedLimiter{err: fmt.Errorf("%w: redis down", limiter.ErrUnavailable)}
	tr, _ := newFakeTransport(Config{KeysHonoured: true, Limiter: lim, Ledger: LedgerConfig{Store: store, Reconciler: notFound}})
	_, err := send(WithAction(context.Background(), act), t, tr, "POST", p.URL, "x")
	heldUnsent(t, err, store, act, p)
}

// markedBefore returns a Memory store on a clock that later moves, in
// which owner reserved acme's action o-1 (lease one second) for a POST
// of "x" to p and marked it sending: an earlier run's request, which may
// have been applied.
func markedBefore(t *testing.T, p *provider, owner string) (store *ledger.Memory, act Action, token int64, later func(time.Duration)) {
	t.Helper()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	store = ledger.NewMemory(ledger.MemoryConfig{Now: func() time.Time { return now }})
	act = Action{Tenant: "acme", Operation: "charge", Key: "o-1"}
	same, _ := http.NewRequest("POST", p.URL, strings.NewReader("x"))
	fp := ledger.Fingerprint(same.Method, same.URL, same.Header, nil, []byte("x"))
	res, err := store.Reserve(context.Background(), ledger.ReserveRequest{Key: act, Fingerprint: fp, Owner: owner,
		Lease: time.Second, MarksSending: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.MarkSending(context.Background(), act, res.Token); err != nil {
		t.Fatal(err)
	}
	return store, act, res.Token, func(d time.Duration) { now = now.Add(d) }
}

// heldUnsent checks that a call of act, which an earlier request may have
// applied, ended before sending (err, the limiter being down) and left
// it maybe applied: the error says so, the record is uncertain, and p got
// nothing.
func heldUnsent(t *testing.T, err error, store *ledger.Memory, act Action, p *provider) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrLimiter) || !e.MaybeApplied {
		t.Fatalf("error %v; want ErrLimiter, maybe applied", err)
	}
	rec, err := store.Get(context.Background(), act)
	if err != nil || rec.State != ledger.StateUncertain {
		t.Fatalf("record %v, %v; want uncertain (an earlier request may have been applied)", rec.State, err)
	}
	if n := len(p.requests()); n != 0 {
		t.Fatalf("provider got %d requests; want none", n)
	}
}
