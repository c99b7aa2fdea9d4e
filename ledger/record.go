package ledger

import (
	"slices"
	"strings"
	"time"
)

// Record is everything a store keeps about one action.
type Record struct {
	// Key is the action's identity. Stores keep it inside the record; only
	// its hash (Key.ID) names the record.
	Key Key
	// Fingerprint is the sealed fingerprint (FingerprintKeys.Seal) of the
	// request that created the action.
	Fingerprint string
	// State is the stored state. It is never StateExpired, and StateAbsent
	// only in a Reservation that wrote nothing for an absent action.
	State State
	// Owner names the last owner, as given in ReserveRequest.Owner.
	Owner string
	// Instance is the ReserveRequest.Instance of the last grant: which run
	// of Owner holds or held the action. Empty when the owner gave none.
	Instance string
	// LeaseUntil is when the current owner's lease ends. Zero unless
	// State is StateInProgress.
	LeaseUntil time.Time
	// Sending reports that an owner marked the action as sending
	// (Store.MarkSending): a request may have left.
	Sending bool
	// SettleUntil is when the settle time of the action's last send ends,
	// by the store's clock: the latest MarkSending or AddAttempt plus the
	// settle time of the grant it was made under (ReserveRequest.Settle).
	// Until then the destination may still apply a request sent, so a
	// reconciler's "not found" is not trusted (Decision.Settling). Zero
	// when nothing was marked or attempted.
	SettleUntil time.Time
	// Outcome is the stored response, set once State is StateCompleted.
	Outcome *Outcome
	// Reason is the reason given with Fail, for operators.
	Reason string
	// Settlement is the audit trail of the operator who settled the action
	// last (Settler), kept through later grants until the record expires.
	// Nil when no operator settled it.
	Settlement *Settlement
	// Attempts is the action's history, oldest first: one entry per
	// ownership grant (Class is the granting Verdict: "created", "retry",
	// "resend" or "reconcile") and one per send its owner reported with
	// AddAttempt.
	Attempts []Attempt
	// CreatedAt is when the action was first reserved, by the store's clock.
	CreatedAt time.Time
	// ExpiresAt is when the record will be dropped.
	ExpiresAt time.Time
}

// Attempt is one entry in an action's history.
type Attempt struct {
	// N numbers the entries of one record from 1.
	N int
	// At is when the store recorded it, by the store's clock.
	At time.Time
	// Class classifies it: a Verdict's name for an ownership grant, or the
	// caller's class for a send, such as "ok", "timeout" or "status-503".
	Class string
	// Owner is the owner that held the action.
	Owner string
	// Token is the fencing token the owner held.
	Token int64
}

// Failure describes why an owner gives an action up without an outcome.
type Failure struct {
	// EffectPossible reports that the destination may have acted: the
	// request may have reached it. False records StateFailed, which a
	// later request retries; true records StateUncertain.
	EffectPossible bool
	// Reason is kept with the record for operators. It must not contain
	// secrets. Zero means no reason.
	Reason string
	// AttemptClass, when not empty, is the class of the owner's last
	// send, recorded by Fail in the action's history in the same atomic
	// step, exactly as AddAttempt would record it, settle time included
	// (see Outcome.AttemptClass). Empty records no send.
	AttemptClass string
}

// stuck reports whether Sweep lists r at now.
func (r *Record) stuck(now time.Time) bool {
	return r.State == StateUncertain || (r.State == StateInProgress && !now.Before(r.LeaseUntil))
}

func (r *Record) clone() Record {
	c := *r
	c.Outcome = r.Outcome.clone()
	c.Attempts = slices.Clone(r.Attempts)
	if r.Settlement != nil {
		s := *r.Settlement
		c.Settlement = &s
	}
	return c
}

// sortRecords orders Sweep's output: oldest lease first, then by ID.
func sortRecords(rs []Record) {
	slices.SortFunc(rs, func(a, b Record) int {
		if c := a.LeaseUntil.Compare(b.LeaseUntil); c != 0 {
			return c
		}
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Key.ID(), b.Key.ID())
	})
}
