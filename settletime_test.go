package retrybudget

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// The settle time: a provider may apply a request seconds after it was
// sent, after the client that sent it is gone. Until the settle time has
// passed since an action's last send, a Reconciler's "not found" is not
// taken as "never applied", so nothing is sent again where keys are not
// honoured; and every send is fenced by the call's token, so a live twin
// that lost its action sends nothing more. Each test counts the charges at
// the provider.

// lateProvider is a payments fake that applies a charge late: its first
// request (with holdFirst) is held until the test lets it apply, as a
// provider still processing a request whose client was SIGKILLed; with
// failFirst the first request is refused with a 503 and no effect. Every
// other request is applied and answered at once. It does not deduplicate
// by key.
type lateProvider struct {
	*httptest.Server
	holdFirst, failFirst bool
	arrived              chan struct{} // closed when the held request arrived
	apply                chan struct{} // closed by the test: apply the held request
	applied              chan struct{} // closed once the held request was applied

	mu      sync.Mutex // guards effects and calls
	effects map[string]int
	calls   int
}

func newLateProvider(t *testing.T, holdFirst, failFirst bool) *lateProvider {
	t.Helper()
	p := &lateProvider{holdFirst: holdFirst, failFirst: failFirst, effects: map[string]int{},
		arrived: make(chan struct{}), apply: make(chan struct{}), applied: make(chan struct{})}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(func() {
		p.release()
		p.Close()
	})
	return p
}

// release lets the held request apply; it is safe to call more than once.
func (p *lateProvider) release() {
	select {
	case <-p.apply:
	default:
		close(p.apply)
	}
}

func (p *lateProvider) serve(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	key := r.Header.Get("Idempotency-Key")
	p.mu.Lock()
	p.calls++
	n := p.calls
	p.mu.Unlock()
	if n == 1 && p.failFirst {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if n == 1 && p.holdFirst {
		close(p.arrived)
		<-p.apply
	}
	p.mu.Lock()
	p.effects[key]++
	p.mu.Unlock()
	if n == 1 && p.holdFirst {
		close(p.applied)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"charge":%q}`, key)
}

// charges returns the charges applied for act and the requests received.
func (p *lateProvider) charges(act Action) (charges, calls int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.effects[act.IdempotencyKey()], p.calls
}

// reconciler looks the action's charge up by key, as a GET would: "not
// found" (StateFailed) while the provider has not applied it yet.
func (p *lateProvider) reconciler() ledger.Reconciler { return keyReconciler(&p.mu, p.effects) }

// storeClock is a Memory store's clock, moved by hand.
type storeClock struct{ ns atomic.Int64 }

func newStoreClock() *storeClock {
	c := &storeClock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}

func (c *storeClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *storeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// killableStore is a process's view of a shared store: once killed (the
// process was SIGKILLed) it writes and reads nothing more, so the records
// it held stay as the process left them.
type killableStore struct {
	ledger.Store
	dead atomic.Bool
}

var errKilled = errors.New("the process was killed")

func (s *killableStore) Reserve(ctx context.Context, req ledger.ReserveRequest) (ledger.Reservation, error) {
	if s.dead.Load() {
		return ledger.Reservation{}, errKilled
	}
	return s.Store.Reserve(ctx, req)
}

func (s *killableStore) Renew(ctx context.Context, k ledger.Key, token int64, lease time.Duration) error {
	if s.dead.Load() {
		return errKilled
	}
	return s.Store.Renew(ctx, k, token, lease)
}

func (s *killableStore) AddAttempt(ctx context.Context, k ledger.Key, token int64, class string) (ledger.Attempt, error) {
	if s.dead.Load() {
		return ledger.Attempt{}, errKilled
	}
	return s.Store.AddAttempt(ctx, k, token, class)
}

func (s *killableStore) Complete(ctx context.Context, k ledger.Key, token int64, o ledger.Outcome) error {
	if s.dead.Load() {
		return errKilled
	}
	return s.Store.Complete(ctx, k, token, o)
}

func (s *killableStore) Fail(ctx context.Context, k ledger.Key, token int64, f ledger.Failure) error {
	if s.dead.Load() {
		return errKilled
	}
	return s.Store.Fail(ctx, k, token, f)
}

func (s *killableStore) MarkSending(ctx context.Context, k ledger.Key, token int64) error {
	if s.dead.Load() {
		return errKilled
	}
	return s.Store.MarkSending(ctx, k, token)
}

// chargeCtx charges act through tr under ctx and returns the response's
// Outcome (read and closed) or the call's error.
func chargeCtx(ctx context.Context, t *testing.T, tr http.RoundTripper, url string, act Action) (Outcome, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(WithAction(ctx, act), "POST", url, strings.NewReader(`{"amount":100}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return Outcome{}, err
	}
	_, o := readAll(t, resp)
	return o, nil
}

// settleConfig is a worker of owner pod-1, run instance, with the
// provider's Reconciler and the 30 s default lease and settle time.
func settleConfig(store ledger.Store, p *lateProvider, instance string) Config {
	return Config{Ledger: LedgerConfig{Store: store, Owner: "pod-1", instance: instance, Reconciler: p.reconciler()}}
}

// wantHeldUntilSettled checks that err holds the call as pending, with
// RetryAt near the end of the settle time that started at sent.
func wantHeldUntilSettled(t *testing.T, err error, sent time.Time) {
	t.Helper()
	var e *Error
	if !errors.Is(err, ErrPending) || !errors.As(err, &e) {
		t.Fatalf("call: %v; want ErrPending until the settle time has passed", err)
	}
	if end := sent.Add(ledger.DefaultLease); e.RetryAt.Before(end.Add(-5*time.Second)) || e.RetryAt.After(end.Add(5*time.Second)) {
		t.Fatalf("RetryAt %s after the send; want about the settle time, %s", e.RetryAt.Sub(sent), ledger.DefaultLease)
	}
}

// A worker SIGKILLed while its charge was at the provider, and restarted
// under the same Owner, must not take the Reconciler's "not found" for "never
// charged" while the provider may still apply the charge: the restarted run
// is held until the settle time has passed, and then finds the charge and
// replays it. Failure pinned: the restarted run reconciled at once, was told
// "not found", and charged again: 2 charges.
func TestRestartUnderOwnerWaitsOutTheSettleTimeBeforeChargingAgain(t *testing.T) {
	clk := newStoreClock()
	store := ledger.NewMemory(ledger.MemoryConfig{Now: clk.Now})
	p := newLateProvider(t, true, false)
	dead := &killableStore{Store: store}
	ctx, kill := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := chargeCtx(ctx, t, New(settleConfig(dead, p, "run-1")), p.URL, order)
		done <- err
	}()
	<-p.arrived // the charge is at the provider, not applied yet
	sent := time.Now()
	dead.dead.Store(true) // SIGKILL: the process writes nothing more,
	kill()                // and its connection is cut
	<-done

	restarted := New(settleConfig(store, p, "run-2"))
	_, err := chargeCtx(context.Background(), t, restarted, p.URL, order)
	p.release() // the provider applies the dead run's charge, late
	<-p.applied
	charges, calls := p.charges(order)
	t.Logf("restart under the same owner: %d charges, %d requests; the restarted run's call: %v", charges, calls, err)
	if charges != 1 || calls != 1 {
		t.Fatalf("%d charges, %d requests at the provider; want 1, 1", charges, calls)
	}
	wantHeldUntilSettled(t, err, sent)

	clk.advance(ledger.DefaultLease + time.Second)
	o, err := chargeCtx(context.Background(), t, restarted, p.URL, order)
	if err != nil || !o.Replayed {
		t.Fatalf("after the settle time: %v, replayed %t; want the charge found and replayed", err, o.Replayed)
	}
	if charges, calls := p.charges(order); charges != 1 || calls != 1 {
		t.Fatalf("after the settle time: %d charges, %d requests; want 1, 1", charges, calls)
	}
}

// Two live processes given one Owner: the second takes the first's action
// over while the first's charge is still being processed, and must not send
// it again on the Reconciler's "not found". Failure pinned: it did, 2
// charges.
func TestTwoLiveProcessesSharingAnOwnerChargeOnceWhileTheProviderIsSlow(t *testing.T) {
	clk := newStoreClock()
	store := ledger.NewMemory(ledger.MemoryConfig{Now: clk.Now})
	p := newLateProvider(t, true, false)
	done := make(chan error, 1)
	go func() {
		_, err := chargeCtx(context.Background(), t, New(settleConfig(store, p, "run-a")), p.URL, order)
		done <- err
	}()
	<-p.arrived
	sent := time.Now()
	b := New(settleConfig(store, p, "run-b"))
	_, err := chargeCtx(context.Background(), t, b, p.URL, order)
	p.release()
	<-p.applied
	<-done
	charges, calls := p.charges(order)
	t.Logf("two live processes under one owner: %d charges, %d requests; the second's call: %v", charges, calls, err)
	if charges != 1 || calls != 1 {
		t.Fatalf("%d charges, %d requests at the provider; want 1, 1", charges, calls)
	}
	wantHeldUntilSettled(t, err, sent)

	clk.advance(ledger.DefaultLease + time.Second)
	if o, err := chargeCtx(context.Background(), t, b, p.URL, order); err != nil || !o.Replayed {
		t.Fatalf("after the settle time: %v, replayed %t; want the charge found and replayed", err, o.Replayed)
	}
	if charges, _ := p.charges(order); charges != 1 {
		t.Fatalf("after the settle time: %d charges, want 1", charges)
	}
}

// An action recorded as uncertain (its call gave up while the charge was at
// the provider) is not settled by a Reconciler's "not found" on the next
// call while the provider may still apply it. Failure pinned: the next call
// reconciled at once and charged again: 2 charges.
func TestUncertainChargeIsNotReconciledAsNotFoundInsideItsSettleTime(t *testing.T) {
	clk := newStoreClock()
	store := ledger.NewMemory(ledger.MemoryConfig{Now: clk.Now})
	p := newLateProvider(t, true, false)
	tr := New(settleConfig(store, p, "run-1"))
	ctx, giveUp := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := chargeCtx(ctx, t, tr, p.URL, order)
		done <- err
	}()
	<-p.arrived
	sent := time.Now()
	giveUp() // the caller gives up: the call records the action as uncertain
	<-done
	if r := stateOf(t, store, order); r.State != ledger.StateUncertain {
		t.Fatalf("after the caller gave up: %s, want uncertain", r.State)
	}

	_, err := chargeCtx(context.Background(), t, tr, p.URL, order)
	p.release()
	<-p.applied
	charges, calls := p.charges(order)
	t.Logf("uncertain record, next call at once: %d charges, %d requests; the call: %v", charges, calls, err)
	if charges != 1 || calls != 1 {
		t.Fatalf("%d charges, %d requests at the provider; want 1, 1", charges, calls)
	}
	wantHeldUntilSettled(t, err, sent)

	clk.advance(ledger.DefaultLease + time.Second)
	if o, err := chargeCtx(context.Background(), t, tr, p.URL, order); err != nil || !o.Replayed {
		t.Fatalf("after the settle time: %v, replayed %t; want the charge found and replayed", err, o.Replayed)
	}
}

// A live twin whose action was taken over while it waited to retry sends
// nothing more: every send is fenced by the call's token, not only the
// first. Failure pinned: the sending mark was written once, so after the
// takeover the twin's retry went out (only its lease keeper, every lease/3,
// would have stopped it): 3 requests and 2 charges.
func TestLiveTwinsRetryAfterATakeoverIsRefused(t *testing.T) {
	store := ledger.NewMemory(ledger.MemoryConfig{})
	p := newLateProvider(t, false, true) // the first request is refused with a 503
	retrying, resume := make(chan struct{}), make(chan struct{})
	a := Config{Ledger: LedgerConfig{Store: store, Owner: "pod-1", instance: "run-a"}, KeysHonoured: true}
	a.Observer.Retry = func(RetryEvent) {
		close(retrying)
		<-resume // the twin waits out its backoff while the action is taken over
	}
	done := make(chan error, 1)
	go func() {
		_, err := chargeCtx(context.Background(), t, New(a), p.URL, order)
		done <- err
	}()
	<-retrying
	b := Config{Ledger: LedgerConfig{Store: store, Owner: "pod-1", instance: "run-b"}, KeysHonoured: true}
	if _, err := chargeCtx(context.Background(), t, New(b), p.URL, order); err != nil {
		t.Fatalf("run-b: %v", err)
	}
	close(resume)
	aErr := <-done
	charges, calls := p.charges(order)
	t.Logf("live twin's retry after a takeover: %d charges, %d requests; the twin's call: %v", charges, calls, aErr)
	if charges != 1 || calls != 2 {
		t.Fatalf("%d charges, %d requests at the provider; want 1 charge from the 2 requests before the twin's retry", charges, calls)
	}
	if !errors.Is(aErr, ErrPending) || !errors.Is(aErr, ledger.ErrNotOwner) {
		t.Fatalf("the twin's call: %v; want ErrPending caused by ErrNotOwner", aErr)
	}
}
