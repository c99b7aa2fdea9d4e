package ledgertest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/retrybudget/retrybudget/ledger"
)

// holdUncertain reserves k and fails it with a possible effect, the state
// an operator settles, and returns the record.
func holdUncertain(t *testing.T, h Harness, k ledger.Key) ledger.Record {
	t.Helper()
	res := h.reserve(t, ledger.ReserveRequest{Key: k, Fingerprint: fpA, Owner: "worker-1"})
	if err := h.Fail(t.Context(), k, res.Token, ledger.Failure{EffectPossible: true, Reason: "timeout after send"}); err != nil {
		t.Fatal(err)
	}
	return h.get(t, k)
}

// settleAs returns a reconciler that answers res, as an operator's
// resolution does (ledgercli.Resolve).
func settleAs(res ledger.Resolution) ledger.Reconciler {
	return func(context.Context, ledger.Record) (ledger.Resolution, error) { return res, nil }
}

// testSettlementKeptWithTheResolution: an operator's resolution writes
// who, why, when (by the store's clock) and as what to the record, with
// the outcome or the failure, and the trail stays through the retry a
// "not applied" allows.
func testSettlementKeptWithTheResolution(t *testing.T, h Harness) {
	if _, ok := h.Store.(ledger.Settler); !ok {
		t.Fatalf("%T does not implement ledger.Settler", h.Store)
	}
	ctx := t.Context()
	applied := ledger.Key{Tenant: "acme", Operation: "sms", Key: "applied"}
	rec := holdUncertain(t, h, applied)
	done := ledger.Reconcile(ctx, h.Store, settleAs(ledger.Resolution{
		State:      ledger.StateCompleted,
		Outcome:    ledger.Outcome{Status: 201, Body: []byte(`{"sid":"SM1"}`)},
		Settlement: &ledger.Settlement{By: "alice", Reason: "found in the provider's log", Reference: "SM1", Applied: false},
	}), []ledger.Record{rec}, "console:alice")
	if len(done) != 1 || done[0].Err != nil || done[0].State != ledger.StateCompleted {
		t.Fatalf("settling as applied: %+v", done)
	}
	got := h.get(t, applied)
	s := got.Settlement
	if got.State != ledger.StateCompleted || got.Outcome == nil || got.Outcome.Status != 201 || s == nil {
		t.Fatalf("after settling as applied: %s %+v settlement %+v", got.State, got.Outcome, s)
	}
	if s.By != "alice" || s.Reason != "found in the provider's log" || s.Reference != "SM1" || !s.Applied ||
		s.At.Before(got.CreatedAt) || s.At.IsZero() {
		t.Errorf("settlement %+v (created %s); want alice, the reason, SM1, applied, at the store's time", s, got.CreatedAt)
	}

	notApplied := ledger.Key{Tenant: "acme", Operation: "sms", Key: "not-applied"}
	rec = holdUncertain(t, h, notApplied)
	done = ledger.Reconcile(ctx, h.Store, settleAs(ledger.Resolution{
		State: ledger.StateFailed, Reason: "not in the provider's log",
		Settlement: &ledger.Settlement{By: "bob", Reason: "not in the provider's log"},
	}), []ledger.Record{rec}, "console:bob")
	if len(done) != 1 || done[0].Err != nil || done[0].State != ledger.StateFailed {
		t.Fatalf("settling as not applied: %+v", done)
	}
	got = h.get(t, notApplied)
	if s := got.Settlement; got.State != ledger.StateFailed || s == nil || s.By != "bob" || s.Applied || got.Reason != "not in the provider's log" {
		t.Fatalf("after settling as not applied: %s reason %q settlement %+v", got.State, got.Reason, s)
	}
	retry := h.reserve(t, ledger.ReserveRequest{Key: notApplied, Fingerprint: fpA, Owner: "worker-2"})
	wantVerdict(t, retry, ledger.VerdictRetry)
	if s := retry.Record.Settlement; s == nil || s.By != "bob" {
		t.Errorf("the retry's record dropped the settlement: %+v", s)
	}
}

// testSettlementRefusesWhatItCannotKeep: a settlement without a name or a
// reason, or for a state an operator does not settle, is ErrInvalid and
// changes nothing; a stale token is ErrNotOwner.
func testSettlementRefusesWhatItCannotKeep(t *testing.T, h Harness) {
	st := h.Store.(ledger.Settler)
	ctx := t.Context()
	rec := holdUncertain(t, h, keyA)
	own := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "op", Reconciler: true})
	wantVerdict(t, own, ledger.VerdictReconcile)
	for name, res := range map[string]ledger.Resolution{
		"no name":       {State: ledger.StateFailed, Settlement: &ledger.Settlement{Reason: "r"}},
		"no reason":     {State: ledger.StateFailed, Settlement: &ledger.Settlement{By: "alice"}},
		"uncertain":     {State: ledger.StateUncertain, Settlement: &ledger.Settlement{By: "alice", Reason: "r"}},
		"no settlement": {State: ledger.StateFailed},
	} {
		if err := st.Settle(ctx, keyA, own.Token, res); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if got := h.get(t, keyA); got.State != ledger.StateInProgress || got.Settlement != nil {
		t.Fatalf("refused settlements changed the record: %s %+v", got.State, got.Settlement)
	}
	ok := ledger.Resolution{State: ledger.StateFailed, Settlement: &ledger.Settlement{By: "alice", Reason: "r"}}
	if err := st.Settle(ctx, keyA, own.Token-1, ok); !errors.Is(err, ledger.ErrNotOwner) {
		t.Errorf("a stale token: %v, want ErrNotOwner", err)
	}
	if got := h.get(t, keyA); got.State != ledger.StateInProgress || got.Settlement != nil || rec.Settlement != nil {
		t.Fatalf("a stale token changed the record: %s %+v", got.State, got.Settlement)
	}
}

// testTwoOperatorsOneSettlement: two operators resolving one action at
// once end with one resolution, the winner's trail; the other's takeover
// does not own the action and writes nothing.
func testTwoOperatorsOneSettlement(t *testing.T, h Harness) {
	rec := holdUncertain(t, h, keyA)
	var (
		wg   sync.WaitGroup
		done [2]ledger.Reconciled
	)
	for i, name := range []string{"alice", "bob"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := ledger.Reconcile(context.Background(), h.Store, settleAs(ledger.Resolution{
				State: ledger.StateCompleted, Outcome: ledger.Outcome{Status: 200 + i},
				Settlement: &ledger.Settlement{By: name, Reason: "seen by " + name},
			}), []ledger.Record{rec}, "console:"+name)
			done[i] = r[0]
		}()
	}
	wg.Wait()
	var winners []int
	for i, d := range done {
		if d.Err != nil {
			t.Fatalf("operator %d: %v", i, d.Err)
		}
		if d.Verdict.Owns() {
			winners = append(winners, i)
		}
	}
	if len(winners) != 1 {
		t.Fatalf("%d operators settled the action (%+v), want exactly one", len(winners), done)
	}
	w := winners[0]
	got := h.get(t, keyA)
	if got.State != ledger.StateCompleted || got.Outcome.Status != 200+w || got.Settlement == nil || got.Settlement.By != []string{"alice", "bob"}[w] {
		t.Fatalf("record %s %+v settlement %+v; want the winner's (%d) alone", got.State, got.Outcome, got.Settlement, w)
	}
	// The loser, arriving after the winner, is refused and changes nothing.
	late := ledger.Reconcile(t.Context(), h.Store, settleAs(ledger.Resolution{
		State: ledger.StateFailed, Settlement: &ledger.Settlement{By: "carol", Reason: "late"},
	}), []ledger.Record{rec}, "console:carol")
	if late[0].Verdict.Owns() || late[0].Err != nil {
		t.Fatalf("a resolution after the settlement: %+v, want a takeover that does not own the action", late[0])
	}
	if again := h.get(t, keyA); again.Settlement == nil || again.Settlement.By != got.Settlement.By || !again.Settlement.At.Equal(got.Settlement.At) {
		t.Fatalf("the late resolution changed the trail: %+v", again.Settlement)
	}
}
