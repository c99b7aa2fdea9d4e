package ledgertest

import (
	"testing"

	"github.com/retrybudget/retrybudget/ledger"
)

// testExpiryReported pins the expiry event: a Reserve that replaces a
// record past its retention reports it (Reservation.Expired), which a
// Reserve of a key never used, or of a live record, does not.
func testExpiryReported(t *testing.T, h Harness) {
	first := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1", Lease: h.Short / 2, Retention: h.Short})
	wantVerdict(t, first, ledger.VerdictCreated)
	if first.Expired {
		t.Fatal("Reserve of a key never used reported an expiry")
	}
	if err := h.Complete(t.Context(), keyA, first.Token, ledger.Outcome{Status: 200}); err != nil {
		t.Fatal(err)
	}
	if res := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA}); res.Verdict != ledger.VerdictReplayed || res.Expired {
		t.Fatalf("live record: %v expired=%v; want replayed, not expired", res.Verdict, res.Expired)
	}
	h.WaitGone(t, keyA)
	again := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpB, Owner: "w2"})
	wantVerdict(t, again, ledger.VerdictCreated)
	if !again.Expired {
		t.Fatal("Reserve over a record past its retention did not report the expiry")
	}
	if again.Record.Fingerprint != sealed(fpB) || again.Record.Outcome != nil {
		t.Fatalf("new action: %+v", again.Record)
	}
	// The expiry is reported once: the new record is live.
	if res := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpB}); res.Expired {
		t.Fatal("expiry reported again for the new record")
	}
}
