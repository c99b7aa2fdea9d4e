package ledger_test

import (
	"testing"

	"github.com/retrybudget/retrybudget/ledger"
)

// plainStore hides a store's Settler, as a wrapper of a user's own does.
type plainStore struct{ ledger.Store }

// Settle on a store that cannot keep a Settlement still settles, with the
// operator's name in the failure's reason, and refuses a settlement
// without a reason as a Settler would.
func TestSettleOnAStoreWithoutSettlerKeepsTheNameInTheReason(t *testing.T) {
	ctx := t.Context()
	m := ledger.NewMemory(ledger.MemoryConfig{})
	s := plainStore{m}
	k := ledger.Key{Tenant: "acme", Operation: "sms", Key: "k"}
	res, err := s.Reserve(ctx, ledger.ReserveRequest{Key: k, Fingerprint: "fp"})
	if err != nil {
		t.Fatal(err)
	}
	bad := ledger.Resolution{State: ledger.StateFailed, Settlement: &ledger.Settlement{By: "alice"}}
	if err := ledger.Settle(ctx, s, k, res.Token, bad); err == nil {
		t.Fatal("a settlement without a reason was accepted")
	}
	ok := ledger.Resolution{State: ledger.StateFailed, Settlement: &ledger.Settlement{By: "alice", Reason: "not in the log"}}
	if err := ledger.Settle(ctx, s, k, res.Token, ok); err != nil {
		t.Fatal(err)
	}
	rec, err := m.Get(ctx, k)
	if err != nil || rec.State != ledger.StateFailed || rec.Reason != "not in the log (settled by alice)" || rec.Settlement != nil {
		t.Fatalf("record %s reason %q settlement %+v (%v); want failed, the name in the reason, no settlement", rec.State, rec.Reason, rec.Settlement, err)
	}
}
