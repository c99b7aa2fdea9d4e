package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/retrybudget/retrybudget/ledger"
)

func ExampleResolve() {
	d := ledger.Resolve(ledger.Input{
		State:             ledger.StateInProgress,
		Fingerprint:       "A",
		StoredFingerprint: "A",
		LeaseExpired:      true,
		KeysHonoured:      true,
	})
	fmt.Println(d.Verdict, d.Send)
	for _, step := range d.Path {
		fmt.Println("-", step)
	}
	// Output:
	// resend true
	// - stored state is in-progress
	// - request fingerprint matches the stored one
	// - the owner's lease expired: it died or stalled mid-call, so the destination may have acted
	// - no reconciler, but the destination honours idempotency keys
	// - take over and re-send under the same provider key, which the destination deduplicates
}

func ExampleMemory() {
	ctx := context.Background()
	store := ledger.NewMemory(ledger.MemoryConfig{})
	action := ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-42"}
	u, _ := url.Parse("https://api.example/v1/charges")
	fp := ledger.Fingerprint("POST", u, nil, nil, []byte(`{"amount":100}`))

	// The first worker wins the action and sends it.
	res, _ := store.Reserve(ctx, ledger.ReserveRequest{Key: action, Fingerprint: fp, Owner: "worker-1"})
	fmt.Println("worker-1:", res.Verdict, "send:", res.Send)

	// A duplicate job arrives while the call is in flight: held.
	dup, _ := store.Reserve(ctx, ledger.ReserveRequest{Key: action, Fingerprint: fp, Owner: "worker-2"})
	fmt.Println("worker-2:", dup.Verdict, errors.Is(dup.Err(), ledger.ErrPending))

	// The first worker records the provider's answer.
	_ = store.Complete(ctx, action, res.Token, ledger.Outcome{
		Status: 201,
		Header: http.Header{"Content-Type": {"application/json"}, "Set-Cookie": {"s=1"}},
		Body:   []byte(`{"id":"ch_1"}`),
	})

	// Later duplicates get the stored response, never a second charge.
	again, _ := store.Reserve(ctx, ledger.ReserveRequest{Key: action, Fingerprint: fp, Owner: "worker-3"})
	o := again.Record.Outcome
	fmt.Println("worker-3:", again.Verdict, o.Status, string(o.Body), o.Header)

	// The same key with a different body is rejected.
	other := ledger.Fingerprint("POST", u, nil, nil, []byte(`{"amount":999}`))
	bad, _ := store.Reserve(ctx, ledger.ReserveRequest{Key: action, Fingerprint: other})
	fmt.Println("reused key:", bad.Verdict, errors.Is(bad.Err(), ledger.ErrConflict))
	// Output:
	// worker-1: created send: true
	// worker-2: pending true
	// worker-3: replayed 201 {"id":"ch_1"} map[Content-Type:[application/json]]
	// reused key: conflict true
}

func ExampleReconcile() {
	ctx := context.Background()
	store := ledger.NewMemory(ledger.MemoryConfig{})
	action := ledger.Key{Operation: "refund", Key: "r-7"}

	// A worker sent the refund, timed out, and could not tell whether the
	// provider acted.
	res, _ := store.Reserve(ctx, ledger.ReserveRequest{Key: action, Fingerprint: "fp"})
	_ = store.Fail(ctx, action, res.Token, ledger.Failure{EffectPossible: true, Reason: "timeout"})

	stuck, _ := store.Sweep(ctx, 0)
	askProvider := func(ctx context.Context, r ledger.Record) (ledger.Resolution, error) {
		// e.g. GET /v1/refunds?idempotency_key=... found it.
		return ledger.Resolution{State: ledger.StateCompleted, Outcome: ledger.Outcome{Status: 200}}, nil
	}
	for _, r := range ledger.Reconcile(ctx, store, askProvider, stuck, "reconciler") {
		fmt.Println(r.Key.Key, r.Verdict, r.State, r.Err)
	}
	// Output:
	// r-7 reconcile completed <nil>
}
