package ledger

import (
	"context"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/fakeclock"
)

// TestReconcileReleasesNeverSentAction pins what a reconciler's takeover
// does with an action whose owner promised to mark it before sending and
// died before doing so: nothing was sent, so it asks nothing and releases
// the action as failed, and the resubmission sends it. Held instead, the
// reconciler's grant (which makes no such promise) would end as an action
// that may have been sent, and the resubmission would be told uncertain.
func TestReconcileReleasesNeverSentAction(t *testing.T) {
	clock := fakeclock.New(time.Unix(1000, 0))
	s := NewMemory(MemoryConfig{Now: clock.Now})
	ctx := t.Context()
	k := Key{Tenant: "acme", Operation: "charge", Key: "never-sent"}
	if _, err := s.Reserve(ctx, ReserveRequest{Key: k, Fingerprint: fpA, Lease: time.Second, MarksSending: true}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second) // the owner died before marking

	asked := 0
	r := SweepOnce(ctx, MonitorConfig{Store: s, Reconciler: func(context.Context, Record) (Resolution, error) {
		asked++
		return Resolution{State: StateUncertain}, nil
	}})
	clock.Advance(2 * DefaultLease) // past any lease the sweep could hold

	next, err := s.Reserve(ctx, ReserveRequest{Key: k, Fingerprint: fpA, MarksSending: true})
	if err != nil {
		t.Fatal(err)
	}
	if asked != 0 || next.Verdict != VerdictRetry || !next.Send {
		t.Fatalf("resubmission: %s (send %t), reconciler asked %d times; want retry, sent, 0", next.Verdict, next.Send, asked)
	}
	if len(r.Reconciled) != 1 || r.Reconciled[0].Err != nil || r.Reconciled[0].Result() != "failed" {
		t.Fatalf("sweep: %+v", r.Reconciled)
	}
}
