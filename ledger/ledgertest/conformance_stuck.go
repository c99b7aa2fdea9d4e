package ledgertest

// The conformance cases about many actions and time: stuck work,
// reconciliation, expiry, races and bad input.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

func testSweep(t *testing.T, h Harness) {
	ctx := t.Context()
	k := func(s string) ledger.Key { return ledger.Key{Tenant: "acme", Operation: "sweep", Key: s} }
	own := func(s string, lease time.Duration) int64 {
		return h.reserve(t, ledger.ReserveRequest{Key: k(s), Fingerprint: fpA, Owner: s, Lease: lease}).Token
	}
	own("stuck", h.Short)
	if err := h.Fail(ctx, k("uncertain"), own("uncertain", time.Hour), ledger.Failure{EffectPossible: true}); err != nil {
		t.Fatal(err)
	}
	if err := h.Fail(ctx, k("failed"), own("failed", time.Hour), ledger.Failure{}); err != nil {
		t.Fatal(err)
	}
	if err := h.Complete(ctx, k("completed"), own("completed", time.Hour), ledger.Outcome{Status: 200}); err != nil {
		t.Fatal(err)
	}
	own("alive", time.Hour)
	h.Advance(t, h.Short)

	got, err := h.Sweep(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range got {
		names = append(names, r.Key.Key+"="+r.State.String())
	}
	// Oldest lease first: the stuck lease is set; uncertain has none.
	if strings.Join(names, ",") != "uncertain=uncertain,stuck=in-progress" {
		t.Fatalf("Sweep = %v", names)
	}
	if one, err := h.Sweep(ctx, 1); err != nil || len(one) != 1 {
		t.Fatalf("Sweep(1) = %d records, %v", len(one), err)
	}
}

func testReconcile(t *testing.T, h Harness) {
	ctx := t.Context()
	k := func(s string) ledger.Key { return ledger.Key{Tenant: "acme", Operation: "reconcile", Key: s} }
	for _, s := range []string{"done", "never", "unknown", "broken"} {
		h.reserve(t, ledger.ReserveRequest{Key: k(s), Fingerprint: fpA, Owner: "dead", Lease: h.Short})
	}
	h.Advance(t, h.Short)
	stuck, err := h.Sweep(ctx, 0)
	if err != nil || len(stuck) != 4 {
		t.Fatalf("Sweep: %d, %v", len(stuck), err)
	}
	var mu sync.Mutex
	asked := map[string]int{}
	fn := func(_ context.Context, r ledger.Record) (ledger.Resolution, error) {
		mu.Lock()
		asked[r.Key.Key]++
		mu.Unlock()
		switch r.Key.Key {
		case "done":
			return ledger.Resolution{State: ledger.StateCompleted, Outcome: ledger.Outcome{Status: 200, Body: []byte("found")}}, nil
		case "never":
			return ledger.Resolution{State: ledger.StateFailed, Reason: "provider has no such request"}, nil
		case "unknown":
			return ledger.Resolution{State: ledger.StateUncertain, Reason: "provider cannot tell"}, nil
		}
		return ledger.Resolution{}, errors.New("provider down")
	}
	results := ledger.Reconcile(ctx, h.Store, fn, stuck, "reconciler")
	want := map[string]ledger.State{"done": ledger.StateCompleted, "never": ledger.StateFailed, "unknown": ledger.StateUncertain, "broken": ledger.StateUncertain}
	for _, r := range results {
		if r.Verdict != ledger.VerdictReconcile || r.State != want[r.Key.Key] || (r.Err != nil) != (r.Key.Key == "broken") {
			t.Errorf("%s: %+v", r.Key.Key, r)
		}
		if got := h.get(t, r.Key); got.State != want[r.Key.Key] || got.Attempts[len(got.Attempts)-1].Class != "reconcile" {
			t.Errorf("%s: record %+v", r.Key.Key, got)
		}
	}
	wantVerdict(t, h.reserve(t, ledger.ReserveRequest{Key: k("done"), Fingerprint: fpA}), ledger.VerdictReplayed)
	wantVerdict(t, h.reserve(t, ledger.ReserveRequest{Key: k("never"), Fingerprint: fpA}), ledger.VerdictRetry)

	// A second pass over the same (now stale) list asks about nothing that
	// is settled or owned by someone else.
	again := ledger.Reconcile(ctx, h.Store, fn, stuck, "reconciler")
	for _, r := range again {
		if r.Key.Key == "done" && r.Verdict != ledger.VerdictReplayed || r.Key.Key == "never" && r.Verdict != ledger.VerdictPending {
			t.Errorf("second pass %s: %+v", r.Key.Key, r)
		}
	}
	if asked["done"] != 1 || asked["never"] != 1 {
		t.Errorf("reconciler asked %v", asked)
	}
}

// testExpiryAfterRetention pins the documented expiry: past its retention
// a record is dropped and the same key runs as a new action.
func testExpiryAfterRetention(t *testing.T, h Harness) {
	first := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1", Lease: h.Short / 2, Retention: h.Short})
	if err := h.Complete(t.Context(), keyA, first.Token, ledger.Outcome{Status: 200, Body: []byte("old")}); err != nil {
		t.Fatal(err)
	}
	wantVerdict(t, h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA}), ledger.VerdictReplayed)
	h.WaitGone(t, keyA)
	if _, err := h.Get(t.Context(), keyA); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("Get after retention: %v", err)
	}
	// Even a different request is no conflict now: it is a new action.
	again := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpB, Owner: "w2"})
	wantVerdict(t, again, ledger.VerdictCreated)
	if again.Token == first.Token || again.Record.Outcome != nil || len(again.Record.Attempts) != 1 || again.Record.Fingerprint != sealed(fpB) {
		t.Fatalf("new action: %+v", again)
	}
	if err := h.Complete(t.Context(), keyA, first.Token, ledger.Outcome{Status: 500}); !errors.Is(err, ledger.ErrNotOwner) {
		t.Fatalf("the expired incarnation's token completed the new one: %v", err)
	}
}

// testFencedWritesPastRetention: an owner that stalls past its record's
// retention (ExpiresAt: its lease and the lease after it over too) holds
// nothing. The record may still be kept a while, so that a Reserve can
// tell expired from absent, but the owner's mark, attempt, outcome and
// failure are all refused: a mark accepted there would let it send an
// action the next Reserve creates and sends anew.
func testFencedWritesPastRetention(t *testing.T, h Harness) {
	ctx := t.Context()
	// Each write on an action of its own: one accepted would change the
	// state the others are refused on.
	writes := []struct {
		name  string
		write func(k ledger.Key, token int64) error
	}{
		{"MarkSending", func(k ledger.Key, token int64) error { return h.MarkSending(ctx, k, token) }},
		{"AddAttempt", func(k ledger.Key, token int64) error { _, err := h.AddAttempt(ctx, k, token, "transport"); return err }},
		{"Complete", func(k ledger.Key, token int64) error { return h.Complete(ctx, k, token, ledger.Outcome{Status: 200}) }},
		{"Fail", func(k ledger.Key, token int64) error { return h.Fail(ctx, k, token, ledger.Failure{Reason: "gave up"}) }},
	}
	tokens := make([]int64, len(writes))
	key := func(i int) ledger.Key {
		return ledger.Key{Tenant: keyA.Tenant, Operation: keyA.Operation, Key: writes[i].name}
	}
	for i := range writes {
		tokens[i] = h.reserve(t, ledger.ReserveRequest{Key: key(i), Fingerprint: fpA, Owner: "w1", Lease: h.Short / 2, Retention: h.Short, MarksSending: true}).Token
	}
	h.Advance(t, 2*h.Short)
	for i, w := range writes {
		if err := w.write(key(i), tokens[i]); !errors.Is(err, ledger.ErrNotOwner) {
			t.Errorf("%s past the record's retention: %v; want ErrNotOwner", w.name, err)
		}
		again := h.reserve(t, ledger.ReserveRequest{Key: key(i), Fingerprint: fpA, Owner: "w2", MarksSending: true})
		if again.Verdict != ledger.VerdictCreated || again.Record.Sending || again.Record.Outcome != nil {
			t.Errorf("after %s, the next Reserve: %s, sending %v, outcome %v; want a new action, never marked",
				w.name, again.Verdict, again.Record.Sending, again.Record.Outcome)
		}
	}
}

func testConcurrentReserve(t *testing.T, h Harness) {
	const n = 50
	var (
		start   = make(chan struct{})
		wg      sync.WaitGroup
		results = make([]ledger.Reservation, n)
		errs    = make([]error, n)
	)
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], errs[i] = h.Reserve(t.Context(), ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: fmt.Sprint("g", i)})
		})
	}
	close(start)
	wg.Wait()
	winners := 0
	for i, res := range results {
		if errs[i] != nil {
			t.Fatalf("goroutine %d: %v", i, errs[i])
		}
		switch res.Verdict {
		case ledger.VerdictCreated:
			winners++
		case ledger.VerdictPending:
		default:
			t.Errorf("goroutine %d: %s", i, res.Verdict)
		}
	}
	if winners != 1 {
		t.Fatalf("%d goroutines won, want exactly 1", winners)
	}
	if r := h.get(t, keyA); len(r.Attempts) != 1 {
		t.Fatalf("history %+v", r.Attempts)
	}
}

func testInvalidRequests(t *testing.T, h Harness) {
	for _, req := range []ledger.ReserveRequest{
		{Key: ledger.Key{Tenant: "t", Operation: "op"}},
		{Key: keyA, Lease: -time.Second},
		{Key: keyA, Retention: -time.Second},
		{Key: keyA, Lease: time.Microsecond},
	} {
		if _, err := h.Reserve(t.Context(), req); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("Reserve(%+v): %v, want ledger.ErrInvalid", req, err)
		}
	}
}

func testCanceledContext(t *testing.T, h Harness) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := h.Reserve(ctx, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Reserve: %v", err)
	}
	if _, err := h.Get(t.Context(), keyA); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("a canceled Reserve wrote: %v", err)
	}
}

// testDeadOwnerOutlivesAShortRetention is a regression test: a record kept
// only to its lease's end vanished when its owner died, and the next
// request was a new action that ran again, skipping the stuck-work
// protection. A record now lives a lease past its lease's end.
func testDeadOwnerOutlivesAShortRetention(t *testing.T, h Harness) {
	h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1", Lease: h.Short, Retention: h.Short / 2})
	h.Advance(t, h.Short+h.Short/4) // the lease is over, the retention long over
	got := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w2"})
	wantVerdict(t, got, ledger.VerdictUncertain)
}
