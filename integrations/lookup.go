package integrations

import (
	"context"
	"fmt"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// Find asks a provider that honours no idempotency key for what an
// action's request would have created: the objects whose identifying
// fields equal the request's exactly (recipient, sender, text, a marker
// the request carried), created no earlier than the action's record. It
// returns each one as the Outcome a replay should answer with. It must
// not perform the action, and it must return an error, not an empty list,
// when it cannot tell (a page it could not read, more objects than it
// looked through).
type Find func(ctx context.Context, r ledger.Record) ([]ledger.Outcome, error)

// LookupReconciler returns a ledger.Reconciler for a provider without
// keys, safe by construction whatever find's provider does:
//
//   - exactly one match: StateCompleted with it, so later runs replay it;
//   - no match once the settle time has passed since the action's last
//     send: StateFailed, and the next run sends again;
//   - anything else (no match yet inside the settle time, several matches,
//     an error): StateUncertain, for the next sweep or an operator.
//
// The settle time is how long after a request left the provider may still
// apply it: a request cut by a crash is processed seconds later, and a
// lookup made meanwhile finds nothing. It runs from the record's last
// attempt (or grant), and never ends before the record's own SettleUntil
// (the store's settle time), by now (a nil now means
// time.Now); zero settle means ledger.DefaultLease, the lease that covered
// this window before a restarted owner could reclaim its actions. The
// record's times are the store's clock: a settle time well above the
// clocks' skew keeps the rule.
func LookupReconciler(find Find, settle time.Duration, now func() time.Time) ledger.Reconciler {
	if settle <= 0 {
		settle = ledger.DefaultLease
	}
	if now == nil {
		now = time.Now
	}
	return func(ctx context.Context, r ledger.Record) (ledger.Resolution, error) {
		found, err := find(ctx, r)
		if err != nil {
			return ledger.Resolution{}, err
		}
		switch {
		case len(found) == 1:
			return ledger.Resolution{State: ledger.StateCompleted, Outcome: found[0]}, nil
		case len(found) > 1:
			return ledger.Resolution{State: ledger.StateUncertain,
				Reason: fmt.Sprintf("lookup: %d objects match the action's request; an operator decides which is its effect", len(found))}, nil
		}
		if until := settledAt(r, settle); now().Before(until) {
			return ledger.Resolution{State: ledger.StateUncertain,
				Reason: fmt.Sprintf("lookup: not found yet; the provider may still apply the last send until %s", until.UTC().Format(time.RFC3339))}, nil
		}
		return ledger.Resolution{State: ledger.StateFailed, Reason: "lookup: not found after the settle time"}, nil
	}
}

// settledAt is when the action's last send has settled: settle after its
// latest history entry that may have sent (its creation when it has none),
// or the record's SettleUntil when that is later.
// A grant to send (created, retry, resend) counts, since its owner may have
// sent without living to record the attempt; a grant to a reconciler sends
// nothing and does not.
func settledAt(r ledger.Record, settle time.Duration) time.Time {
	last := r.CreatedAt
	for _, a := range r.Attempts {
		if a.Class != ledger.VerdictReconcile.String() && a.At.After(last) {
			last = a.At
		}
	}
	if until := last.Add(settle); until.After(r.SettleUntil) {
		return until
	}
	return r.SettleUntil
}
