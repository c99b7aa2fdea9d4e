package ledger

import (
	"context"
	"time"
)

// Store keeps action records and applies Resolve to them atomically. Memory
// and Redis implement it and pass the same conformance suite.
//
// Every method that changes a record after Reserve takes the fencing token
// Reserve handed out. A token stops being current when another owner takes
// the action over (VerdictRetry, VerdictResend, VerdictReconcile) or when
// the action leaves StateInProgress; calls with a stale token fail with
// ErrNotOwner and change nothing. An owner whose lease ran out but whom
// nobody replaced still holds a current token: its late result is better
// recorded than lost.
type Store interface {
	// Reserve reads the action's record, applies Resolve with the store's
	// clock, and, when the Verdict owns the action, writes the new owner,
	// lease and token, all in one atomic step. Being held or rejected is
	// data in the Reservation, not an error.
	Reserve(ctx context.Context, req ReserveRequest) (Reservation, error)
	// Renew extends the owner's lease to lease from now. Zero lease means
	// the store's Config.Lease.
	Renew(ctx context.Context, k Key, token int64, lease time.Duration) error
	// AddAttempt appends a send to the action's history, with class
	// describing how it went, and returns the entry as stored. It starts
	// the settle time again from now (Record.SettleUntil), since the send
	// it records may still be applied.
	AddAttempt(ctx context.Context, k Key, token int64, class string) (Attempt, error)
	// Complete stores the destination's response and moves the action to
	// StateCompleted. The store filters headers and caps the body as
	// Config says. With Outcome.AttemptClass it first records that send
	// in the history, as AddAttempt would, in the same atomic step.
	Complete(ctx context.Context, k Key, token int64, o Outcome) error
	// Fail gives the action up without an outcome: StateFailed when no
	// effect was possible, StateUncertain otherwise. With
	// Failure.AttemptClass it first records that send in the history, as
	// AddAttempt would, in the same atomic step.
	Fail(ctx context.Context, k Key, token int64, f Failure) error
	// MarkSending records that the owner is about to send (or run) the
	// action, fenced by its token, and starts the send's settle time
	// (Record.SettleUntil). An owner that reserved with
	// ReserveRequest.MarksSending calls it before every send (the first
	// excepted when Reservation.Sending says the grant wrote it) and does not
	// send when it fails: a token that stopped being current (another
	// owner took the action over) stops the next send, not only the
	// first. The mark stays for the record's life: once any owner marked
	// it, an expired lease means the destination may have acted.
	MarkSending(ctx context.Context, k Key, token int64) error
	// Get returns the action's record, or ErrNotFound.
	Get(ctx context.Context, k Key) (Record, error)
	// Sweep lists stuck work: actions in progress whose lease ended, and
	// actions in StateUncertain, oldest lease first. Zero limit means all.
	// A record it cannot decode (ErrCorrupt: a damaged field, an outcome
	// no encryption key opens) does not hide the others: Sweep skips it
	// and returns the records it listed together with an error wrapping
	// ErrCorrupt that names the skipped ones. Any other error comes with
	// no records.
	Sweep(ctx context.Context, limit int) ([]Record, error)
}

// ReserveRequest asks a Store to reserve or look up an action.
type ReserveRequest struct {
	// Key is the action. Key.Key must not be empty.
	Key Key
	// Fingerprint is the request's fingerprint (see Fingerprint).
	Fingerprint string
	// Owner names the caller, such as a host and process ID, for
	// operators. Zero is allowed; the fencing token, not Owner, decides
	// who may complete. With Instance, a stable Owner (a pod name) lets a
	// restarted worker reclaim its own actions at once.
	Owner string
	// Instance identifies one run of the Owner: a random value drawn once
	// per process start. A record in progress under a live lease granted
	// to the same non-empty Owner with another non-empty Instance was
	// granted to a run of this owner that has since restarted, and is
	// decided as if its lease had expired (Input.Reclaim): taken over with
	// a new fencing token, then run, reconciled, re-sent or left uncertain
	// exactly as for a dead owner. Owner names must therefore be unique
	// among live processes; two live processes sharing one take each
	// other's actions over (fencing still keeps each action to one
	// sender), which the loser sees as ErrOwnerShared (see
	// CheckOwnerShared). Zero means unknown: no reclaim, and the request's
	// own grants are never reclaimed by others.
	Instance string
	// Lease is how long the caller holds the action if it wins. Zero means
	// Config.Lease.
	Lease time.Duration
	// Settle is the settle time of the caller's sends if it wins: how long
	// after a send (its MarkSending or AddAttempt) the destination may
	// still apply it, at least the destination's processing time. Until
	// it has passed, a reconciler's "not found" does not let the action
	// be sent again where keys are not honoured (Decision.Settling). Zero
	// means the grant's lease; there is no "forever".
	Settle time.Duration
	// Retention is how long a newly created record lives. Zero means
	// Config.Retention. It is ignored for existing records.
	Retention time.Duration
	// Limited, Reconciler and KeysHonoured are passed to Resolve; see
	// Input.
	Limited, Reconciler, KeysHonoured bool
	// Nonce identifies this reservation. A Reserve sent again with the
	// same Nonce after its reply was lost (a client timeout, a retry by
	// the Redis client) finds its own grant and gets it back, token
	// included, instead of being held as pending by itself. Use a fresh
	// random value (NewNonce) per logical reservation. Empty means the
	// store draws one per call, which still covers the re-sends its own
	// client makes within the call.
	Nonce string
	// MarksSending promises that the caller, if granted the action, calls
	// MarkSending before every send, the first included. A grant made
	// with the promise whose lease ran out while no owner had marked the
	// action is provably unsent, and the next Reserve takes it over to send (VerdictRetry)
	// instead of treating it as possibly applied.
	MarksSending bool
	// Sending asks the store to write the sending mark with the grant, in
	// the same atomic step, when the Verdict sends (VerdictCreated,
	// VerdictRetry, VerdictResend): as if MarkSending ran at once, fenced
	// by the new token, starting the settle time. It saves the caller the
	// MarkSending before its first send, at a price: a caller that then
	// stops before sending (a crash, a limiter wait that does not fit)
	// leaves an action that reads as maybe sent, which the next Reserve
	// re-sends only where keys are honoured and otherwise holds as
	// uncertain. Ask for it only where a maybe-sent action is re-sent
	// under a key the destination deduplicates. A store that does not
	// know the field ignores it and leaves Reservation.Sending false; the
	// caller then marks before the send as before.
	Sending bool
	// ReplacesFailed lets a request whose fingerprint differs from the
	// stored one take over an action that failed without effect (see
	// Resolve), its fingerprint then stored in place of the old: nothing
	// of the failed request took effect, so there is nothing for the
	// fingerprint to guard. The outbound Transport sets it, so a request
	// corrected after an answer the provider saved nothing for is sent;
	// the inbound middleware does not, and answers a changed request
	// under a failed key as a reuse (422), as the IETF Idempotency-Key
	// draft asks.
	ReplacesFailed bool
}

// Reservation is a Store's answer to Reserve.
type Reservation struct {
	// Decision is Resolve's decision on the stored state.
	Decision
	// Record is the record after Reserve: as written when the caller now
	// owns the action, as found otherwise. When the action was absent and
	// nothing was written (VerdictDelayed), only Key is set and State is
	// StateAbsent.
	Record Record
	// Token is the fencing token the caller now holds, or zero when
	// Verdict.Owns is false.
	Token int64
	// RetryAfter is, for VerdictPending, how long the current owner's lease
	// still runs; for VerdictReconcile with Decision.Settling, how long the
	// settle time still runs. Zero otherwise.
	RetryAfter time.Duration
	// Expired reports that the action had a record that outlived its
	// retention (Record.ExpiresAt) and that this Reserve replaced it with
	// a new one: the expiry event, which an absent action does not raise.
	// Stores keep an expired record for ExpiryGrace before dropping it
	// (the PostgreSQL store until its Purge), so an expiry older than that
	// reads as absent.
	Expired bool
	// Sending reports that this grant wrote the sending mark, as
	// ReserveRequest.Sending asked: the record is marked and its settle
	// time started. False when the request did not ask, when the Verdict
	// does not send, and from a store that does not know the field: then
	// the caller calls MarkSending before its first send.
	Sending bool
	// SettlesAttempt reports that the store records the send that
	// Complete and Fail carry (Outcome.AttemptClass,
	// Failure.AttemptClass) in the action's history as AddAttempt would.
	// False from a store that does not know those fields: the caller then
	// records its last send with AddAttempt before settling.
	SettlesAttempt bool
}

// Err returns nil when the caller may proceed (it owns the action, or gets
// a replay) and otherwise an *Error wrapping ErrPending, ErrConflict,
// ErrDelayed or ErrUncertain.
func (r Reservation) Err() error {
	var sentinel error
	switch r.Verdict {
	case VerdictPending:
		sentinel = ErrPending
	case VerdictConflict:
		sentinel = ErrConflict
	case VerdictDelayed:
		sentinel = ErrDelayed
	case VerdictUncertain:
		sentinel = ErrUncertain
	default:
		return nil
	}
	return &Error{
		Err:        sentinel,
		Key:        r.Record.Key,
		Verdict:    r.Verdict,
		State:      r.Record.State,
		RetryAfter: r.RetryAfter,
		Path:       r.Path,
	}
}
