package ledgertest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// The cases of a restarted owner: a Reserve by the same Owner under another
// Instance takes the live lease over at once, as if it had expired, and a
// live process that loses its action that way learns the owner name is
// shared.

// testRestartedOwnerReclaims: an action reserved and never marked as
// sending by run-1 of owner pod-1 is held from everyone else for its whole
// lease, but run-2 of pod-1 takes it over at once, with a new token, to
// run it (nothing can have been sent). The old token is then refused.
func testRestartedOwnerReclaims(t *testing.T, h Harness) {
	ctx := t.Context()
	first := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "pod-1", Instance: "run-1",
		Lease: time.Hour, MarksSending: true, Nonce: ledger.NewNonce()})
	wantVerdict(t, first, ledger.VerdictCreated)
	if first.Record.Instance != "run-1" {
		t.Fatalf("Record.Instance = %q, want run-1", first.Record.Instance)
	}
	// Held: another owner; the same run (another call of one process);
	// the same owner when the request or the record names no instance.
	for _, req := range []ledger.ReserveRequest{
		{Owner: "pod-2", Instance: "run-9"},
		{Owner: "pod-1", Instance: "run-1"},
		{Owner: "pod-1"},
		{Owner: "", Instance: "run-2"},
	} {
		req.Key, req.Fingerprint, req.Nonce = keyA, fpA, ledger.NewNonce()
		if res := h.reserve(t, req); res.Verdict != ledger.VerdictPending {
			t.Fatalf("owner %q instance %q: %s, want pending (path %q)", req.Owner, req.Instance, res.Verdict, res.Path)
		}
	}
	kNone := ledger.Key{Tenant: "acme", Operation: "charge", Key: "no-instance"}
	h.reserve(t, ledger.ReserveRequest{Key: kNone, Fingerprint: fpA, Owner: "pod-1", Lease: time.Hour})
	if res := h.reserve(t, ledger.ReserveRequest{Key: kNone, Fingerprint: fpA, Owner: "pod-1", Instance: "run-2"}); res.Verdict != ledger.VerdictPending {
		t.Fatalf("a grant made without an instance was reclaimed: %s", res.Verdict)
	}

	// A rate-limited destination delays the reclaim and writes nothing.
	if res := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "pod-1", Instance: "run-2", Limited: true}); res.Verdict != ledger.VerdictDelayed || res.Token != 0 {
		t.Fatalf("limited reclaim: %s token %d, want delayed", res.Verdict, res.Token)
	}
	if r := h.get(t, keyA); r.Instance != "run-1" || len(r.Attempts) != 1 {
		t.Fatalf("a delayed reclaim changed the record: %+v", r)
	}

	req := ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "pod-1", Instance: "run-2",
		Lease: time.Hour, MarksSending: true, Nonce: ledger.NewNonce()}
	res := h.reserve(t, req)
	want := ledger.Resolve(ledger.Input{State: ledger.StateInProgress, Fingerprint: fpA, StoredFingerprint: fpA,
		Reclaim: true, Unsent: true})
	if res.Verdict != ledger.VerdictRetry || !res.Send || !slices.Equal(res.Path, want.Path) {
		t.Fatalf("reclaim: %s send %t path %q; want retry, send, path %q", res.Verdict, res.Send, res.Path, want.Path)
	}
	if res.Token <= first.Token || res.Record.Instance != "run-2" || res.Record.Owner != "pod-1" {
		t.Fatalf("reclaim: token %d after %d, record %+v", res.Token, first.Token, res.Record)
	}
	if again := h.reserve(t, req); again.Verdict != ledger.VerdictRetry || again.Token != res.Token {
		t.Fatalf("re-sent reclaim: %s token %d; want its own grant, token %d", again.Verdict, again.Token, res.Token)
	}
	if err := h.MarkSending(ctx, keyA, first.Token); !errors.Is(err, ledger.ErrNotOwner) {
		t.Fatalf("the restarted run's MarkSending: %v, want ErrNotOwner", err)
	}
	if err := h.Complete(ctx, keyA, first.Token, ledger.Outcome{Status: 201}); !errors.Is(err, ledger.ErrNotOwner) {
		t.Fatalf("the restarted run's Complete: %v, want ErrNotOwner", err)
	}
	if err := h.MarkSending(ctx, keyA, res.Token); err != nil {
		t.Fatal(err)
	}
	if err := h.Complete(ctx, keyA, res.Token, ledger.Outcome{Status: 201}); err != nil {
		t.Fatal(err)
	}
	r := h.get(t, keyA)
	if r.State != ledger.StateCompleted || r.Attempts[len(r.Attempts)-1].Class != "retry" {
		t.Fatalf("record %+v", r)
	}
}

// testReclaimOfMaybeSent: an action the earlier run marked as sending is
// reclaimed exactly as Resolve decides for a dead owner: reconciled with a
// reconciler, re-sent when keys are honoured, else left uncertain with
// nothing written.
func testReclaimOfMaybeSent(t *testing.T, h Harness) {
	for _, tc := range []struct {
		name                     string
		reconciler, keysHonoured bool
		want                     ledger.Verdict
	}{
		{"reconciler", true, false, ledger.VerdictReconcile},
		{"keys honoured", false, true, ledger.VerdictResend},
		{"neither", false, false, ledger.VerdictUncertain},
	} {
		k := ledger.Key{Tenant: "acme", Operation: "charge", Key: "sent-" + tc.name}
		first := h.reserve(t, ledger.ReserveRequest{Key: k, Fingerprint: fpA, Owner: "pod-1", Instance: "run-1", Lease: time.Hour, MarksSending: true})
		if err := h.MarkSending(t.Context(), k, first.Token); err != nil {
			t.Fatal(err)
		}
		before := h.get(t, k)
		res := h.reserve(t, ledger.ReserveRequest{Key: k, Fingerprint: fpA, Owner: "pod-1", Instance: "run-2",
			Lease: time.Hour, MarksSending: true, Reconciler: tc.reconciler, KeysHonoured: tc.keysHonoured})
		// The earlier run's mark has just started its settle time.
		want := ledger.Resolve(ledger.Input{State: ledger.StateInProgress, Fingerprint: fpA, StoredFingerprint: fpA,
			Reclaim: true, Reconciler: tc.reconciler, KeysHonoured: tc.keysHonoured, Settling: true})
		if res.Verdict != tc.want || want.Verdict != tc.want || !slices.Equal(res.Path, want.Path) || res.Settling != want.Settling {
			t.Fatalf("%s: %s path %q; want %s path %q", tc.name, res.Verdict, res.Path, tc.want, want.Path)
		}
		after := h.get(t, k)
		if !tc.want.Owns() {
			if res.Token != 0 || after.Instance != "run-1" || len(after.Attempts) != len(before.Attempts) {
				t.Fatalf("%s: an uncertain decision wrote: token %d, record %+v", tc.name, res.Token, after)
			}
			if !errors.Is(res.Err(), ledger.ErrUncertain) {
				t.Fatalf("%s: Err() = %v", tc.name, res.Err())
			}
			continue
		}
		if res.Token != first.Token+1 || after.Instance != "run-2" || !after.Sending {
			t.Fatalf("%s: token %d after %d, record %+v", tc.name, res.Token, first.Token, after)
		}
	}
}

// testSharedOwnerNameIsReported: two live runs under one owner name take
// each other's actions over; the loser's fenced call is refused, and
// CheckOwnerShared names the misconfiguration, while a takeover by another
// owner (after a lease really ran out) stays a plain ErrNotOwner.
func testSharedOwnerNameIsReported(t *testing.T, h Harness) {
	ctx := t.Context()
	a := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "pod-1", Instance: "run-a", Lease: time.Hour, MarksSending: true})
	b := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "pod-1", Instance: "run-b", Lease: time.Hour, MarksSending: true})
	wantVerdict(t, b, ledger.VerdictRetry)
	err := h.MarkSending(ctx, keyA, a.Token)
	if !errors.Is(err, ledger.ErrNotOwner) {
		t.Fatalf("MarkSending by the run that lost: %v, want ErrNotOwner", err)
	}
	shared := ledger.CheckOwnerShared(ctx, h.Store, keyA, "pod-1", "run-a", err)
	if !errors.Is(shared, ledger.ErrOwnerShared) || !errors.Is(shared, ledger.ErrNotOwner) {
		t.Fatalf("CheckOwnerShared = %v, want ErrOwnerShared wrapping ErrNotOwner", shared)
	}
	// The winner itself, and anything not ErrNotOwner, are left alone.
	if got := ledger.CheckOwnerShared(ctx, h.Store, keyA, "pod-1", "run-b", err); errors.Is(got, ledger.ErrOwnerShared) {
		t.Fatalf("the current holder was told its name is shared: %v", got)
	}
	if got := ledger.CheckOwnerShared(ctx, h.Store, keyA, "pod-1", "run-a", nil); got != nil {
		t.Fatalf("CheckOwnerShared(nil) = %v", got)
	}

	kB := ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-2"}
	old := h.reserve(t, ledger.ReserveRequest{Key: kB, Fingerprint: fpA, Owner: "pod-1", Instance: "run-a", Lease: h.Short, MarksSending: true})
	h.Advance(t, h.Short)
	wantVerdict(t, h.reserve(t, ledger.ReserveRequest{Key: kB, Fingerprint: fpA, Owner: "pod-2", Instance: "run-c", Lease: time.Hour}), ledger.VerdictRetry)
	err = h.Renew(ctx, kB, old.Token, time.Hour)
	if got := ledger.CheckOwnerShared(ctx, h.Store, kB, "pod-1", "run-a", err); !errors.Is(got, ledger.ErrNotOwner) || errors.Is(got, ledger.ErrOwnerShared) {
		t.Fatalf("a takeover by another owner: %v, want a plain ErrNotOwner", got)
	}
}
