package retrybudget

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/budget"
	"github.com/retrybudget/retrybudget/ledger"
)

// deadWorker leaves in the store and at the provider exactly what a worker
// that died at one point of a call leaves behind: its store writes and the
// provider's effects. Nothing else of a dead process survives.
type deadWorker struct {
	t     *testing.T
	store ledger.Store
	p     *payments
	token int64
}

func (d *deadWorker) reserve(body string) {
	u, _ := url.Parse(d.p.URL)
	res, err := d.store.Reserve(context.Background(), ledger.ReserveRequest{
		Key: order, Fingerprint: ledger.Fingerprint("POST", u, nil, nil, []byte(body)),
		Owner: "dead", Lease: time.Second,
	})
	if err != nil || !res.Send {
		d.t.Fatalf("dead worker's reserve: %v %v", res.Verdict, err)
	}
	d.token = res.Token
}

// send delivers the request to the provider, which applies the effect.
func (d *deadWorker) send(body string) {
	tr := New(Config{Budget: budget.Unlimited{}})
	resp, err := chargeTo(d.t, tr, d.p.URL, order, body) // same action: same key
	if err != nil {
		d.t.Fatal(err)
	}
	readAll(d.t, resp)
}

func (d *deadWorker) complete() {
	err := d.store.Complete(context.Background(), order, d.token,
		ledger.Outcome{Status: 201, Body: []byte(fmt.Sprintf(`{"charge":%q}`, order.IdempotencyKey()))})
	if err != nil {
		d.t.Fatal(err)
	}
}

func TestLedgerCrashAtEachPoint(t *testing.T) {
	const body = `{"amount":100}`
	tests := []struct {
		name string
		// die leaves the footprint of a worker that died at the point.
		die func(d *deadWorker)
		// reconciler, when set, is the restarted worker's Reconciler.
		reconciler func(p *payments) ledger.Reconciler
		calls      int // provider requests in all
		replayed   bool
		verdict    string // the ledger event the restarted worker sees
	}{
		{"before reservation", func(d *deadWorker) {}, nil, 1, false, "created"},
		{"after reservation", func(d *deadWorker) { d.reserve(body) }, nil, 1, false, "resend"},
		{"after reservation, reconciler finds nothing", func(d *deadWorker) { d.reserve(body) }, byKey, 1, false, "reconcile"},
		{"before complete", func(d *deadWorker) { d.reserve(body); d.send(body) }, nil, 2, false, "resend"},
		{"before complete, reconciler finds the charge", func(d *deadWorker) { d.reserve(body); d.send(body) }, byKey, 1, true, "reconcile"},
		{"after complete", func(d *deadWorker) { d.reserve(body); d.send(body); d.complete() }, nil, 1, true, "replayed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPayments(t, true)
			var mu sync.Mutex
			now := time.Now()
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			store := ledger.NewMemory(ledger.MemoryConfig{Now: clock})
			tt.die(&deadWorker{t: t, store: store, p: p})
			mu.Lock()
			now = now.Add(time.Minute) // the dead worker's lease has run out
			mu.Unlock()
			var verdicts []string
			cfg := Config{Ledger: LedgerConfig{Store: store}, KeysHonoured: true,
				Observer: Observer{Ledger: func(e LedgerEvent) { verdicts = append(verdicts, e.Verdict.String()) }}}
			if tt.reconciler != nil {
				cfg.Ledger.Reconciler = tt.reconciler(p)
			}
			tr, _ := newFakeTransport(cfg)
			resp, err := chargeTo(t, tr, p.URL, order, body)
			if err != nil {
				t.Fatal(err)
			}
			got, o := readAll(t, resp)
			effects, calls := p.total()
			r := stateOf(t, store, order)
			if effects != 1 || calls != tt.calls || r.State != ledger.StateCompleted || o.Replayed != tt.replayed {
				t.Fatalf("effects %d calls %d state %v replayed %v; want 1, %d, completed, %v",
					effects, calls, r.State, o.Replayed, tt.calls, tt.replayed)
			}
			if len(verdicts) != 1 || verdicts[0] != tt.verdict {
				t.Fatalf("ledger events %v; want [%s]", verdicts, tt.verdict)
			}
			if !strings.Contains(got, order.IdempotencyKey()) {
				t.Fatalf("body %q; want the charge's receipt", got)
			}
		})
	}
}

func TestLedgerCrashAfterCompleteBeforeTheCallerSawIt(t *testing.T) {
	// The worker completed the call, then died before using the answer: the
	// job queue runs the action again and gets the receipt, not a charge.
	p := newPayments(t, false)
	store := ledger.NewMemory(ledger.MemoryConfig{})
	tr, _ := newFakeTransport(Config{Ledger: LedgerConfig{Store: store}})
	resp, err := chargeTo(t, tr, p.URL, order, `{"amount":100}`)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // the answer is lost with the worker
	again, err := chargeTo(t, New(Config{Ledger: LedgerConfig{Store: store}}), p.URL, order, `{"amount":100}`)
	if err != nil {
		t.Fatal(err)
	}
	_, o := readAll(t, again)
	if effects, calls := p.total(); effects != 1 || calls != 1 || !o.Replayed {
		t.Fatalf("effects %d calls %d replayed %v; want 1, 1, true", effects, calls, o.Replayed)
	}
}

func TestLedgerUncertainWithoutHonouredKeysOrReconciler(t *testing.T) {
	p := newPayments(t, false)
	var mu sync.Mutex
	now := time.Now()
	store := ledger.NewMemory(ledger.MemoryConfig{Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
	d := &deadWorker{t: t, store: store, p: p}
	d.reserve(`{"amount":100}`)
	d.send(`{"amount":100}`)
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	var verdicts []string
	tr, _ := newFakeTransport(Config{Ledger: LedgerConfig{Store: store}, Observer: Observer{Ledger: func(e LedgerEvent) { verdicts = append(verdicts, e.Verdict.String()) }}})
	_, err := chargeTo(t, tr, p.URL, order, `{"amount":100}`)
	if len(verdicts) != 1 || verdicts[0] != "uncertain" {
		t.Fatalf("ledger events %v; want [uncertain]", verdicts)
	}
	var e *Error
	if !errors.As(err, &e) || e.Reason != ErrUncertain || !e.MaybeApplied || e.Class != ClassMaybeSent {
		t.Fatalf("error %v; want ErrUncertain, maybe applied, for an operator", err)
	}
	if effects, calls := p.total(); effects != 1 || calls != 1 {
		t.Fatalf("effects %d calls %d; want the dead worker's 1 and no re-send", effects, calls)
	}
	stuck, err := store.Sweep(context.Background(), 0)
	if err != nil || len(stuck) != 1 || stuck[0].Key != order {
		t.Fatalf("sweep %v %v; want the action listed as stuck", stuck, err)
	}
}

// byKey is a Reconciler asking the payments fake whether it has an effect
// for the action's key, as a GET by idempotency key would.
func byKey(p *payments) ledger.Reconciler { return keyReconciler(&p.mu, p.effects) }

// keyReconciler is a Reconciler asking a provider fake, whose effects per
// key mu guards, whether it has an effect for the action's key, as a GET
// by idempotency key would.
func keyReconciler(mu *sync.Mutex, effects map[string]int) ledger.Reconciler {
	return func(_ context.Context, r ledger.Record) (ledger.Resolution, error) {
		key := Action(r.Key).IdempotencyKey()
		mu.Lock()
		n := effects[key]
		mu.Unlock()
		if n == 0 {
			return ledger.Resolution{State: ledger.StateFailed, Reason: "no charge at the provider"}, nil
		}
		return ledger.Resolution{State: ledger.StateCompleted, Outcome: ledger.Outcome{
			Status: 201, Body: []byte(fmt.Sprintf(`{"charge":%q}`, key))}}, nil
	}
}
