package ledgertest

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// The cases of the settle time: a destination may apply a request after its
// sender is gone, so for the settle time after an action's last send
// (MarkSending, AddAttempt) a reconciler's "not found" is not trusted where
// keys are not honoured (Decision.Settling). A restarted owner, a live twin
// and the next request for an uncertain action all meet it.

// testRestartedOwnerWaitsOutTheSettleTime: run-2 of owner pod-1 reclaims an
// action run-1 marked as sending at once, but inside the settle time only
// to ask: the reconcile grant is Settling, with RetryAfter to the settle
// time's end, and a "not found" it is told is kept uncertain (Trust). The
// next request inside the settle time is Settling again; once it has
// passed, "not found" is trusted. With keys honoured nothing is held.
func testRestartedOwnerWaitsOutTheSettleTime(t *testing.T, h Harness) {
	ctx := t.Context()
	first := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "pod-1", Instance: "run-1",
		Lease: time.Hour, Settle: h.Short, MarksSending: true})
	if err := h.MarkSending(ctx, keyA, first.Token); err != nil {
		t.Fatal(err)
	}
	marked := h.get(t, keyA)
	if !marked.Sending || marked.SettleUntil.IsZero() || marked.SettleUntil.After(marked.LeaseUntil) {
		t.Fatalf("after MarkSending: sending %t, settle until %v, lease until %v", marked.Sending, marked.SettleUntil, marked.LeaseUntil)
	}

	restarted := ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "pod-1", Instance: "run-2",
		Lease: time.Hour, MarksSending: true, Reconciler: true, Nonce: ledger.NewNonce()}
	res := h.reserve(t, restarted)
	want := ledger.Resolve(ledger.Input{State: ledger.StateInProgress, Fingerprint: fpA, StoredFingerprint: fpA,
		Reclaim: true, Reconciler: true, Settling: true})
	if res.Verdict != ledger.VerdictReconcile || !res.Settling || !reflect.DeepEqual(res.Decision, want) {
		t.Fatalf("reclaim inside the settle time: %s settling %t path %q; want %s settling %t path %q",
			res.Verdict, res.Settling, res.Path, want.Verdict, want.Settling, want.Path)
	}
	if res.RetryAfter <= 0 || res.RetryAfter > h.Short {
		t.Fatalf("RetryAfter %s; want the rest of the %s settle time", res.RetryAfter, h.Short)
	}
	// The reply was lost and the request sent again: its own grant comes
	// back, still inside the settle time.
	if regrant := h.reserve(t, restarted); regrant.Token != res.Token || !regrant.Settling || regrant.RetryAfter <= 0 {
		t.Fatalf("re-sent reclaim: token %d settling %t retry after %s; want token %d, settling", regrant.Token, regrant.Settling, regrant.RetryAfter, res.Token)
	}
	notFound := res.Trust(ledger.Resolution{State: ledger.StateFailed, Reason: "not found"})
	if notFound.State != ledger.StateUncertain {
		t.Fatalf("Trust(not found) inside the settle time = %s, want uncertain", notFound.State)
	}
	if found := res.Trust(ledger.Resolution{State: ledger.StateCompleted}); found.State != ledger.StateCompleted {
		t.Fatalf("Trust(completed) = %s, want completed", found.State)
	}
	if err := ledger.Settle(ctx, h.Store, keyA, res.Token, notFound); err != nil {
		t.Fatal(err)
	}
	if r := h.get(t, keyA); r.State != ledger.StateUncertain || !r.SettleUntil.Equal(marked.SettleUntil) {
		t.Fatalf("after the untrusted not-found: %s, settle until %v; want uncertain, %v kept", r.State, r.SettleUntil, marked.SettleUntil)
	}

	// The uncertain record is not settled by "not found" either, until
	// the settle time has passed.
	next := ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "pod-2", Lease: time.Hour, Reconciler: true}
	again := h.reserve(t, next)
	if again.Verdict != ledger.VerdictReconcile || !again.Settling {
		t.Fatalf("uncertain inside the settle time: %s settling %t; want reconcile, settling", again.Verdict, again.Settling)
	}
	if err := ledger.Settle(ctx, h.Store, keyA, again.Token, again.Trust(ledger.Resolution{State: ledger.StateFailed})); err != nil {
		t.Fatal(err)
	}
	h.Advance(t, h.Short)
	after := h.reserve(t, next)
	if after.Verdict != ledger.VerdictReconcile || after.Settling || after.RetryAfter != 0 {
		t.Fatalf("after the settle time: %s settling %t retry after %s; want reconcile, not settling", after.Verdict, after.Settling, after.RetryAfter)
	}
	if got := after.Trust(ledger.Resolution{State: ledger.StateFailed}); got.State != ledger.StateFailed {
		t.Fatalf("Trust(not found) after the settle time = %s, want failed", got.State)
	}

	// Keys honoured: a re-send under the key is deduplicated, so nothing
	// waits for the settle time.
	kB := ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-2"}
	b := h.reserve(t, ledger.ReserveRequest{Key: kB, Fingerprint: fpA, Owner: "pod-1", Instance: "run-1", Lease: time.Hour, MarksSending: true})
	if err := h.MarkSending(ctx, kB, b.Token); err != nil {
		t.Fatal(err)
	}
	for i, reconciler := range []bool{true, false} {
		// Each a new run of pod-1, reclaiming from the one before.
		kr := h.reserve(t, ledger.ReserveRequest{Key: kB, Fingerprint: fpA, Owner: "pod-1", Instance: fmt.Sprintf("run-%d", i+2),
			Lease: time.Hour, Reconciler: reconciler, KeysHonoured: true, Nonce: ledger.NewNonce()})
		if !kr.Verdict.Owns() || kr.Settling {
			t.Fatalf("keys honoured, reconciler %t: %s settling %t; want a takeover, not settling", reconciler, kr.Verdict, kr.Settling)
		}
	}
}

// testSendsRestartTheSettleTime: MarkSending and AddAttempt each start the
// settle time again from the store's clock, with the grant's settle time;
// zero means the grant's lease, and a negative one is refused.
func testSendsRestartTheSettleTime(t *testing.T, h Harness) {
	ctx := t.Context()
	res := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1", Lease: time.Hour, Settle: time.Minute, MarksSending: true})
	if !res.Record.SettleUntil.IsZero() {
		t.Fatalf("a new grant has SettleUntil %v, want zero: nothing was sent", res.Record.SettleUntil)
	}
	a, err := h.AddAttempt(ctx, keyA, res.Token, "timeout")
	if err != nil {
		t.Fatal(err)
	}
	if r := h.get(t, keyA); !r.SettleUntil.Equal(a.At.Add(time.Minute)) {
		t.Fatalf("after AddAttempt at %v: SettleUntil %v, want %v", a.At, r.SettleUntil, a.At.Add(time.Minute))
	}

	kB := ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-2"}
	b := h.reserve(t, ledger.ReserveRequest{Key: kB, Fingerprint: fpA, Owner: "w1", Lease: time.Hour, MarksSending: true})
	if err := h.MarkSending(ctx, kB, b.Token); err != nil {
		t.Fatal(err)
	}
	r := h.get(t, kB)
	// The default is the lease: the mark came after the grant, within a
	// minute however slow the store.
	if d := r.SettleUntil.Sub(r.LeaseUntil); d < 0 || d > time.Minute {
		t.Fatalf("default settle time: SettleUntil %v, LeaseUntil %v; want the lease from the mark", r.SettleUntil, r.LeaseUntil)
	}

	kC := ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-3"}
	if _, err := h.Reserve(ctx, ledger.ReserveRequest{Key: kC, Fingerprint: fpA, Owner: "w1", Settle: -time.Second}); !errors.Is(err, ledger.ErrInvalid) {
		t.Fatalf("a negative settle time: %v, want ErrInvalid", err)
	}
}

// testEverySendIsFenced: an owner marks before every send, and once its
// action was taken over (here by a re-send under honoured keys) its next
// mark is refused and changes nothing: the mark fences each send, not only
// the first.
func testEverySendIsFenced(t *testing.T, h Harness) {
	ctx := t.Context()
	a := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "pod-1", Instance: "run-a", Lease: time.Hour, MarksSending: true})
	for range 2 {
		if err := h.MarkSending(ctx, keyA, a.Token); err != nil {
			t.Fatalf("the owner's mark before a send: %v", err)
		}
	}
	b := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "pod-1", Instance: "run-b", Lease: time.Hour,
		KeysHonoured: true, MarksSending: true})
	wantVerdict(t, b, ledger.VerdictResend)
	if err := h.MarkSending(ctx, keyA, b.Token); err != nil {
		t.Fatal(err)
	}
	before := h.get(t, keyA)
	if err := h.MarkSending(ctx, keyA, a.Token); !errors.Is(err, ledger.ErrNotOwner) {
		t.Fatalf("the twin's mark before its retry: %v, want ErrNotOwner", err)
	}
	if after := h.get(t, keyA); !reflect.DeepEqual(after, before) {
		t.Fatalf("a refused mark changed the record:\nbefore %+v\nafter  %+v", before, after)
	}
}
