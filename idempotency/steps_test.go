package idempotency_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/idempotency"
	"github.com/retrybudget/retrybudget/ledger"
)

// Steps of an inbound action (WithStep) against its own expiry and a
// crashed server: each test is named after the rule it pins.

// stepHandler forwards the inbound body to the provider under the
// "provider" step and answers 201 with the provider's body, or 502 when
// the call failed; errs receives each call's error.
func stepHandler(client *http.Client, url string, errs chan<- error) handlerFunc {
	return func(_ int, w http.ResponseWriter, r *http.Request) {
		ctx, err := idempotency.WithStep(r.Context(), "provider")
		if err != nil {
			panic(err)
		}
		in, _ := io.ReadAll(r.Body)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/charges", strings.NewReader(string(in)))
		resp, err := client.Do(req)
		if errs != nil {
			errs <- err
		}
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		w.WriteHeader(http.StatusCreated)
		w.Write(b)
	}
}

func TestDerivedStepRecordOutlivesItsAction(t *testing.T) {
	// A step's record expires with its action. Failure pinned: the step's
	// record kept the store's
	// 24 h retention while the inbound record expired after its own, so a
	// changed request under the expired key, a new action by contract,
	// met the old step record: a ledger conflict, 502 on every retry.
	p := startProvider(t)
	var e *env
	client := &http.Client{}
	e = newEnv(t, idempotency.Config{Retention: time.Second, Lease: time.Second},
		func(run int, w http.ResponseWriter, r *http.Request) {
			stepHandler(client, p.srv.URL, nil)(run, w, r)
		})
	client.Transport = retrybudget.New(retrybudget.Config{Ledger: retrybudget.LedgerConfig{Store: e.store}})

	if res := e.send(request{body: `{"amount":100}`}); res.Code != http.StatusCreated {
		t.Fatalf("first request: %d %s", res.Code, res.Body)
	}
	e.clock.Advance(time.Hour) // the inbound record is gone; the step's is not
	if _, err := e.store.Get(context.Background(), thingsKey("k1")); err == nil {
		t.Fatal("inbound record still there after an hour")
	}
	if res := e.send(request{body: `{"amount":200}`}); res.Code != http.StatusCreated {
		t.Fatalf("changed request under the expired key: %d %s; want 201 (a new action)", res.Code, res.Body)
	}
	keys := p.seen()
	if len(keys) != 2 || keys[0] == keys[1] {
		t.Errorf("provider saw keys %q; want two calls under two keys (two actions)", keys)
	}
}

func TestCrashRecoverySaysDestinationFailedWhenNeverCalled(t *testing.T) {
	// Recovery after a crash answers "destination failed" only if the
	// destination was called. Failure pinned: after a server died
	// mid-request, the
	// request that took the inbound action over when its lease ended found
	// the step still held by the dead server's longer outbound lease; the
	// handler's 502 was recorded and answered (destination failed, though
	// it was never called), and every poll ran the handler again.
	// In Atomic mode as without it: the held step is answered 409 pending.
	for _, atomicMode := range []bool{false, true} {
		t.Run(fmt.Sprintf("Atomic=%v", atomicMode), func(t *testing.T) { crashRecoveryWhenNeverCalled(t, atomicMode) })
	}
}

func crashRecoveryWhenNeverCalled(t *testing.T, atomicMode bool) {
	const inboundLease, outboundLease = 10 * time.Second, 30 * time.Second
	p := startProvider(t)
	client := &http.Client{}
	errs := make(chan error, 10)
	var e *env
	now := func() time.Time { return e.clock.Now() }
	cfg := idempotency.Config{Lease: inboundLease, RerunUncertain: true, Now: now}
	var store *ledger.Memory
	if atomicMode {
		// The handler's transaction: the Memory stand-in of pgledger's.
		store = ledger.NewMemory(ledger.MemoryConfig{Now: now})
		cfg.Store, cfg.Atomic = &atomicMemory{Memory: store}, true
	}
	e = newEnv(t, cfg, func(run int, w http.ResponseWriter, r *http.Request) {
		stepHandler(client, p.srv.URL, errs)(run, w, r)
	})
	if store == nil {
		store = e.store
	}
	client.Transport = retrybudget.New(retrybudget.Config{KeysHonoured: true,
		Ledger: retrybudget.LedgerConfig{Store: store, Lease: outboundLease, Owner: "survivor"}})
	ctx := context.Background()

	// The dead server: it reserved and marked the inbound action, then its
	// Transport reserved the step, and it was killed before anything else.
	in := thingsKey("k1")
	res, err := store.Reserve(ctx, ledger.ReserveRequest{Key: in, Fingerprint: fingerprint(request{}),
		Owner: "dead", Lease: inboundLease, MarksSending: true})
	if err != nil || !res.Verdict.Owns() {
		t.Fatalf("dead inbound reserve: %v %v", res.Verdict, err)
	}
	if err := store.MarkSending(ctx, in, res.Token); err != nil {
		t.Fatal(err)
	}
	step, _ := idempotency.Outbound(in, res.Record.CreatedAt, "provider")
	sres, err := store.Reserve(ctx, ledger.ReserveRequest{Key: step,
		Fingerprint: ledger.Fingerprint(http.MethodPost, mustURL(p.srv.URL+"/v1/charges"), nil, nil, []byte(defaultBody)),
		Owner:       "dead", Lease: outboundLease})
	if err != nil || !sres.Verdict.Owns() {
		t.Fatalf("dead step reserve: %v %v", sres.Verdict, err)
	}

	e.clock.Advance(inboundLease + time.Second) // inbound lease over, step's not
	for i := range 3 {
		r := e.send(request{})
		if r.Code != http.StatusConflict || problemBody(t, r).Type != idempotency.TypePending {
			t.Fatalf("poll %d at 11s: %d %s; want 409 pending", i, r.Code, r.Body)
		}
		// The take-over holds the action until the step's lease ends and
		// says so; later polls find it pending and get the hint (1s),
		// which never passes the lease.
		want := "1"
		if i == 0 {
			want = "19"
		}
		if ra := r.Header().Get("Retry-After"); ra != want {
			t.Errorf("poll %d: Retry-After %q; want %s", i, ra, want)
		}
	}
	if n := e.runs.Load(); n != 1 {
		t.Errorf("handler ran %d times while the step was held; want 1 (the take-over)", n)
	}
	if n := len(p.seen()); n != 0 {
		t.Fatalf("provider called %d times while the step was held", n)
	}

	e.clock.Advance(outboundLease - inboundLease) // both leases over
	r := e.send(request{})
	if r.Code != http.StatusCreated {
		t.Fatalf("after both leases: %d %s; want 201", r.Code, r.Body)
	}
	if n := len(p.seen()); n != 1 {
		t.Errorf("provider called %d times; want 1", n)
	}
}
