package ledger

import "fmt"

// Verdict is what Resolve decides for one request against one stored
// action. The zero value is VerdictCreated.
type Verdict uint8

const (
	// VerdictCreated means no live record existed: the store reserved the
	// action for the caller, who now sends it.
	VerdictCreated Verdict = iota
	// VerdictReplayed means the action already completed: do not send,
	// return the stored response marked as replayed.
	VerdictReplayed
	// VerdictPending means another owner holds a live lease: do not send,
	// retry after the lease ends.
	VerdictPending
	// VerdictConflict means the key was reused for a different request:
	// do not send, report the conflict.
	VerdictConflict
	// VerdictDelayed means the action would be sent but the destination is
	// rate limited: do not send now. The record is left as it was, never
	// deleted or reset, so the action keeps its identity while it waits.
	VerdictDelayed
	// VerdictUncertain means the destination may have acted and nothing can
	// settle it automatically: do not send, leave it for an operator.
	VerdictUncertain
	// VerdictRetry means the last attempt failed before any effect: the
	// caller takes the action over and sends it again under the same key.
	VerdictRetry
	// VerdictResend means the outcome was uncertain but the destination
	// honours idempotency keys: the caller takes the action over and sends
	// it again under the same provider key, which the destination
	// deduplicates.
	VerdictResend
	// VerdictReconcile means the outcome was uncertain and a reconciler is
	// configured: the caller takes the action over and asks the reconciler
	// what the destination did, then settles the record (see Settle).
	VerdictReconcile
)

// String returns the verdict's lower-case name.
func (v Verdict) String() string {
	switch v {
	case VerdictCreated:
		return "created"
	case VerdictReplayed:
		return "replayed"
	case VerdictPending:
		return "pending"
	case VerdictConflict:
		return "conflict"
	case VerdictDelayed:
		return "delayed"
	case VerdictUncertain:
		return "uncertain"
	case VerdictRetry:
		return "retry"
	case VerdictResend:
		return "resend"
	case VerdictReconcile:
		return "reconcile"
	}
	return fmt.Sprintf("Verdict(%d)", uint8(v))
}

// Owns reports whether a store that reaches this verdict hands the action
// to the caller: a lease and a fresh fencing token, which Renew, AddAttempt,
// Complete and Fail require.
func (v Verdict) Owns() bool {
	switch v {
	case VerdictCreated, VerdictRetry, VerdictResend, VerdictReconcile:
		return true
	}
	return false
}

// ParseVerdict is the inverse of Verdict.String, for the verdicts stores
// keep (the Redis script's reply, a PostgreSQL row).
func ParseVerdict(s string) (Verdict, bool) {
	for v := VerdictCreated; v <= VerdictReconcile; v++ {
		if v.String() == s {
			return v, true
		}
	}
	return 0, false
}
