package ledgertest

import (
	"errors"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// The cases of the writes an owner folds into others: the sending mark
// into the grant (ReserveRequest.Sending), the last send into the outcome
// (Outcome.AttemptClass, Failure.AttemptClass).

// testGrantCarriesTheMark: a grant that sends, asked to, is marked as
// MarkSending would mark it: Record.Sending, the settle time started, and
// an expired lease reads as maybe sent; a reconcile grant is not marked.
func testGrantCarriesTheMark(t *testing.T, h Harness) {
	res := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "dead", Lease: h.Short, Settle: time.Hour,
		MarksSending: true, Sending: true})
	wantVerdict(t, res, ledger.VerdictCreated)
	if !res.Sending || !res.SettlesAttempt {
		t.Fatalf("Reservation.Sending %v, SettlesAttempt %v; want both", res.Sending, res.SettlesAttempt)
	}
	rec := h.get(t, keyA)
	if !rec.Sending {
		t.Fatal("the grant asked to carry the mark left the record unmarked")
	}
	// The settle time runs from the grant, whose entry carries its time.
	if at := rec.Attempts[len(rec.Attempts)-1].At; rec.SettleUntil.Before(at.Add(time.Hour-time.Second)) || rec.SettleUntil.After(at.Add(time.Hour+time.Second)) {
		t.Fatalf("SettleUntil %v; want the grant's time %v plus the settle time", rec.SettleUntil, at)
	}
	h.Advance(t, h.Short)
	// Marked, so the dead owner may have sent: no retry as if unsent.
	wantVerdict(t, h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w2", MarksSending: true}), ledger.VerdictUncertain)

	kB := ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-2"}
	b := h.reserve(t, ledger.ReserveRequest{Key: kB, Fingerprint: fpA, Owner: "dead", Lease: h.Short, MarksSending: true})
	if b.Sending || h.get(t, kB).Sending {
		t.Fatal("a grant not asked to carry the mark wrote it")
	}
	h.Advance(t, h.Short)
	rc := h.reserve(t, ledger.ReserveRequest{Key: kB, Fingerprint: fpA, Owner: "w2", Lease: h.Short, Reconciler: true, MarksSending: true, Sending: true})
	wantVerdict(t, rc, ledger.VerdictRetry) // never marked: provably unsent
	if !rc.Sending {
		t.Fatal("a retry grant asked to carry the mark did not")
	}
	// The mark fences like MarkSending: the stale owner's writes fail.
	if err := h.MarkSending(t.Context(), kB, b.Token); !errors.Is(err, ledger.ErrNotOwner) {
		t.Fatalf("the replaced owner's mark: %v, want ErrNotOwner", err)
	}
	h.Advance(t, h.Short)
	again := h.reserve(t, ledger.ReserveRequest{Key: kB, Fingerprint: fpA, Owner: "w3", Reconciler: true, MarksSending: true, Sending: true})
	wantVerdict(t, again, ledger.VerdictReconcile)
	if again.Sending {
		t.Fatal("a reconcile grant, which only asks, reported the mark written")
	}
}

// testSettlingCarriesTheLastSend: the send Complete and Fail carry is in
// the history as AddAttempt would put it, settle time started.
func testSettlingCarriesTheLastSend(t *testing.T, h Harness) {
	ctx := t.Context()
	a := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1", Lease: time.Hour, Settle: time.Hour})
	if err := h.Complete(ctx, keyA, a.Token, ledger.Outcome{Status: 201, AttemptClass: "success"}); err != nil {
		t.Fatal(err)
	}
	wantLastSend(t, h.get(t, keyA), "success", a.Token)
	if r := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA}); r.Record.Outcome == nil || r.Record.Outcome.AttemptClass != "" {
		t.Fatalf("replayed outcome %+v; want one without AttemptClass", r.Record.Outcome)
	}

	kB := ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-2"}
	b := h.reserve(t, ledger.ReserveRequest{Key: kB, Fingerprint: fpA, Owner: "w1", Lease: time.Hour, Settle: time.Hour})
	if err := h.Fail(ctx, kB, b.Token, ledger.Failure{EffectPossible: true, Reason: "timeout", AttemptClass: "maybe-sent"}); err != nil {
		t.Fatal(err)
	}
	wantLastSend(t, h.get(t, kB), "maybe-sent", b.Token)

	kC := ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-3"}
	c := h.reserve(t, ledger.ReserveRequest{Key: kC, Fingerprint: fpA, Owner: "w1", Lease: time.Hour})
	if err := h.Fail(ctx, kC, c.Token, ledger.Failure{Reason: "throttled"}); err != nil {
		t.Fatal(err)
	}
	if r := h.get(t, kC); len(r.Attempts) != 1 || !r.SettleUntil.IsZero() {
		t.Fatalf("Fail without AttemptClass: %d entries, SettleUntil %v; want the grant alone, no settle time", len(r.Attempts), r.SettleUntil)
	}
}

func wantLastSend(t *testing.T, r ledger.Record, class string, token int64) {
	t.Helper()
	if len(r.Attempts) != 2 {
		t.Fatalf("history %+v; want the grant and the send", r.Attempts)
	}
	e := r.Attempts[1]
	if e.N != 2 || e.Class != class || e.Token != token || e.Owner != "w1" {
		t.Fatalf("last entry %+v; want n 2, class %q, token %d, owner w1", e, class, token)
	}
	if d := r.SettleUntil.Sub(e.At); d < time.Hour-time.Second || d > time.Hour+time.Second {
		t.Fatalf("SettleUntil %v, send at %v; want the send plus the settle time", r.SettleUntil, e.At)
	}
}
