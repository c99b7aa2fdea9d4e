package ledger

import (
	"context"
	"errors"
	"fmt"
)

// Reconciler asks the destination what became of an action whose outcome
// is uncertain, typically with a GET by idempotency key. It must not
// perform the action. It returns what the destination reports:
//
//   - StateCompleted with the destination's Outcome: it performed the
//     action; later requests replay the Outcome;
//   - StateFailed: it never performed the action; the next request
//     retries it under the same key;
//   - StateUncertain: it cannot tell; the record stays for an operator.
//
// An error leaves the record uncertain too.
type Reconciler func(ctx context.Context, r Record) (Resolution, error)

// Resolution is a Reconciler's finding.
type Resolution struct {
	// State is StateCompleted, StateFailed or StateUncertain.
	State State
	// Outcome is the destination's response, for StateCompleted.
	Outcome Outcome
	// Reason is kept with the record for StateFailed and StateUncertain.
	// It must not contain secrets.
	Reason string
	// Settlement, when set, makes the resolution an operator's: Settle
	// then records it with the record (Record.Settlement), and State must
	// be StateCompleted or StateFailed. Nil means a reconciler's finding,
	// which keeps no trail.
	Settlement *Settlement
}

// Settle records a Resolution for an action the caller owns, such as after
// a VerdictReconcile reservation: Complete for StateCompleted, Fail
// otherwise. Any other State is ErrInvalid and changes nothing. A
// Resolution with a Settlement goes to the store's Settler.Settle, which
// writes the trail in the same step; a store that is not a Settler gets
// Complete or Fail, with the trail in words in the Failure's Reason (the
// trail of an applied settlement is then lost).
func Settle(ctx context.Context, s Store, k Key, token int64, res Resolution) error {
	if res.Settlement != nil {
		if st, ok := s.(Settler); ok {
			return st.Settle(ctx, k, token, res)
		}
		a, err := settlementOf(res)
		if err != nil {
			return err
		}
		res.Reason = fmt.Sprintf("%s (settled by %s)", a.Reason, a.By)
	}
	switch res.State {
	case StateCompleted:
		return s.Complete(ctx, k, token, res.Outcome)
	case StateFailed:
		return s.Fail(ctx, k, token, Failure{Reason: res.Reason})
	case StateUncertain:
		return s.Fail(ctx, k, token, Failure{EffectPossible: true, Reason: res.Reason})
	}
	return fmt.Errorf("%w: a reconciler cannot settle an action as %s", ErrInvalid, res.State)
}

// Trust returns what may be acted on of res, a reconciler's finding on
// the action r granted to reconcile: res itself, except that "never
// performed" (StateFailed) inside the settle time (Decision.Settling)
// becomes StateUncertain, since the destination may still apply a request
// it has not reported yet. The record then stays for the next request
// after r.RetryAfter, which asks again.
func (r Reservation) Trust(res Resolution) Resolution {
	if r.Settling && res.State == StateFailed {
		return Resolution{State: StateUncertain, Reason: "not found inside the settle time of its last send: the destination may still apply it"}
	}
	return res
}

// Reconciled reports what Reconcile did with one record.
type Reconciled struct {
	// Key is the action.
	Key Key
	// Verdict is what Reserve decided. Only VerdictReconcile ran the
	// reconciler; VerdictPending, for instance, means another owner took the
	// action over since the sweep; VerdictRetry or VerdictCreated means the
	// action was never sent, and Reconcile released it as failed.
	Verdict Verdict
	// State is the state Reconcile left the record in, when it ran the
	// reconciler.
	State State
	// Err is the reconciler's or the store's error, if any.
	Err error
}

// Result names what became of the record, the one vocabulary of monitors,
// logs and metrics: the state it was settled in ("completed", "failed",
// "uncertain"), also "failed" for an action found never sent and released;
// "skipped" when another owner had taken the action over before the
// reconciler reached it; "error" when the reconciler or the store failed.
func (r Reconciled) Result() string {
	switch {
	case r.Err != nil:
		return "error"
	case !r.Verdict.Owns():
		return "skipped"
	}
	return r.State.String()
}

// Reconcile runs fn over records, such as those Sweep returned. For each
// it takes the action over with Reserve (as owner, with a reconciler, so
// the stored fingerprint and identity are kept), asks fn, and settles the
// record with Settle, what fn found passed through Reservation.Trust: a
// "never performed" inside the settle time of the last send stays
// uncertain, for a later sweep. A takeover that finds the action never sent
// (VerdictRetry, VerdictCreated) asks nothing and records it failed (no
// effect), so its next request sends it. A reconciler error records the action as uncertain,
// so the next sweep lists it at once instead of after a lease. Reconcile
// returns one Reconciled per record, in order, and stops early only when
// ctx ends.
func Reconcile(ctx context.Context, s Store, fn Reconciler, records []Record, owner string) []Reconciled {
	out := make([]Reconciled, 0, len(records))
	for _, rec := range records {
		if ctx.Err() != nil {
			break
		}
		out = append(out, reconcileOne(ctx, s, fn, rec, owner))
	}
	return out
}

func reconcileOne(ctx context.Context, s Store, fn Reconciler, rec Record, owner string) Reconciled {
	r := Reconciled{Key: rec.Key}
	res, err := s.Reserve(ctx, ReserveRequest{
		Key: rec.Key, Fingerprint: rec.Fingerprint, Owner: owner, Reconciler: true,
	})
	if err != nil {
		r.Err = err
		return r
	}
	r.Verdict, r.State = res.Verdict, res.Record.State
	if res.Verdict.Owns() && res.Verdict != VerdictReconcile {
		// The takeover found nothing to ask about: the action was never
		// sent (its owner promised to mark it and nobody did), failed
		// without effect, or is gone. Held, the grant would end with its
		// lease as one that may have been sent (a reconciler does not
		// promise to mark), and the next caller would be told uncertain.
		// Nothing was sent and nothing will be: release it as failed.
		// That reading is sound because a store that cannot keep a mark
		// (Redis with WaitReplicas) refuses to let its owner send.
		if err := s.Fail(ctx, rec.Key, res.Token, Failure{Reason: "never sent: released by the reconciler"}); err != nil {
			r.Err = err
			return r
		}
		r.State = StateFailed
		return r
	}
	if res.Verdict != VerdictReconcile {
		return r
	}
	found, err := fn(ctx, res.Record)
	switch {
	case err != nil:
		found = Resolution{State: StateUncertain, Reason: "reconciler failed"}
	case found.State != StateCompleted && found.State != StateFailed && found.State != StateUncertain:
		err = fmt.Errorf("%w: reconciler returned state %s", ErrInvalid, found.State)
		found = Resolution{State: StateUncertain, Reason: "reconciler returned an invalid state"}
	}
	found = res.Trust(found)
	if serr := Settle(ctx, s, rec.Key, res.Token, found); serr != nil {
		r.Err = errors.Join(err, serr)
		return r
	}
	r.State, r.Err = found.State, err
	return r
}
