package ledgertest

import (
	"errors"
	"testing"

	"github.com/retrybudget/retrybudget/ledger"
)

// The cases of a lost reservation reply: a re-sent Reserve finds its own
// grant, and a grant whose owner never marked the action as sending is
// provably unsent.

func testReserveRecognisesItsOwnGrant(t *testing.T, h Harness) {
	req := ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1", Lease: h.Short, Nonce: ledger.NewNonce()}
	first := h.reserve(t, req)
	wantVerdict(t, first, ledger.VerdictCreated)
	// The reply to the first was lost; the same request is sent again.
	again := h.reserve(t, req)
	wantVerdict(t, again, ledger.VerdictCreated)
	if again.Token != first.Token || !again.Send {
		t.Fatalf("re-sent Reserve: token %d send %v; want the first grant's token %d, send", again.Token, again.Send, first.Token)
	}
	if n := len(h.get(t, keyA).Attempts); n != 1 {
		t.Fatalf("history has %d entries; want the one grant", n)
	}
	other := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w2", Nonce: ledger.NewNonce()})
	wantVerdict(t, other, ledger.VerdictPending)
	if noNonce := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w2"}); noNonce.Verdict != ledger.VerdictPending {
		t.Fatalf("a request without a nonce got %s; want pending", noNonce.Verdict)
	}

	// A takeover is recognised the same way, with its own verdict.
	h.Advance(t, h.Short)
	take := ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w3", KeysHonoured: true, Nonce: ledger.NewNonce()}
	second := h.reserve(t, take)
	wantVerdict(t, second, ledger.VerdictResend)
	if again := h.reserve(t, take); again.Verdict != ledger.VerdictResend || again.Token != second.Token {
		t.Fatalf("re-sent takeover: %s token %d; want resend with token %d", again.Verdict, again.Token, second.Token)
	}
	if err := h.Complete(t.Context(), keyA, second.Token, ledger.Outcome{Status: 201}); err != nil {
		t.Fatal(err)
	}
	// Once settled, the nonce no longer grants anything.
	wantVerdict(t, h.reserve(t, take), ledger.VerdictReplayed)
}

func testUnmarkedGrantIsProvablyUnsent(t *testing.T, h Harness) {
	ctx := t.Context()
	kB := ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-2"}
	kC := ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-3"}
	kD := ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-4"}
	// keyA: promised, never marked. kB: promised and marked. kC: no
	// promise (an owner that does not mark). kD: marked by a first owner,
	// then taken over by a second that died before marking.
	unmarked := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "dead", Lease: h.Short, MarksSending: true})
	marked := h.reserve(t, ledger.ReserveRequest{Key: kB, Fingerprint: fpA, Owner: "dead", Lease: h.Short, MarksSending: true})
	if err := h.MarkSending(ctx, kB, marked.Token); err != nil {
		t.Fatal(err)
	}
	h.reserve(t, ledger.ReserveRequest{Key: kC, Fingerprint: fpA, Owner: "dead", Lease: h.Short})
	d1 := h.reserve(t, ledger.ReserveRequest{Key: kD, Fingerprint: fpA, Owner: "dead", Lease: h.Short, MarksSending: true})
	if err := h.MarkSending(ctx, kD, d1.Token); err != nil {
		t.Fatal(err)
	}
	if err := h.MarkSending(ctx, keyA, unmarked.Token+1); !errors.Is(err, ledger.ErrNotOwner) {
		t.Fatalf("MarkSending with a stale token: %v; want ErrNotOwner", err)
	}
	if h.get(t, keyA).Sending || !h.get(t, kB).Sending {
		t.Fatal("Record.Sending does not follow MarkSending")
	}
	h.Advance(t, h.Short)
	d2 := h.reserve(t, ledger.ReserveRequest{Key: kD, Fingerprint: fpA, Owner: "dead", Lease: h.Short, KeysHonoured: true, MarksSending: true})
	wantVerdict(t, d2, ledger.VerdictResend)
	h.Advance(t, h.Short)

	next := ledger.ReserveRequest{Fingerprint: fpA, Owner: "w2", MarksSending: true}
	for _, tc := range []struct {
		k    ledger.Key
		want ledger.Verdict
	}{
		{keyA, ledger.VerdictRetry}, // nothing can have left
		{kB, ledger.VerdictUncertain},
		{kC, ledger.VerdictUncertain},
		{kD, ledger.VerdictUncertain}, // the first owner's mark stays
	} {
		next.Key = tc.k
		res := h.reserve(t, next)
		if res.Verdict != tc.want {
			t.Errorf("%s: %s; want %s (path %q)", tc.k.Key, res.Verdict, tc.want, res.Path)
		}
	}
}
