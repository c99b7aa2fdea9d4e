package retrybudget

import (
	"context"
	"errors"
)

// reasonCodes names each reason the Transport stops, in the order they are
// matched.
var reasonCodes = [...]struct {
	err  error
	code string
}{
	{ErrAttemptsExhausted, "attempts_exhausted"},
	{ErrDeadline, "deadline"},
	{ErrWaitTooLong, "wait_too_long"},
	{ErrUncertain, "uncertain"},
	{ErrRejected, "rejected"},
	{ErrBudgetExhausted, "budget_exhausted"},
	{ErrThrottled, "throttled"},
	{ErrRateLimited, "rate_limited"},
	{ErrLimiter, "limiter"},
	{ErrBodyNotReplayable, "body_not_replayable"},
	{ErrPending, "pending"},
	{ErrConflict, "conflict"},
	{ErrLedger, "ledger"},
	{ErrInvalidAction, "invalid_action"},
	{ErrBodyUnreadable, "body_unreadable"},
	{ErrNoCall, "no_call"},
	{ErrRedirectNotFollowed, "redirect_not_followed"},
	{context.Canceled, "canceled"},
	{context.DeadlineExceeded, "deadline_exceeded"},
}

// ReasonCode returns the short code that names reason, an Outcome's Reason
// (or any error wrapping one), in metrics, logs and reports: such as
// "attempts_exhausted", "budget_exhausted" or "deadline_exceeded". It
// matches by identity with errors.Is, so a reworded message changes
// nothing. The codes are stable: dashboards and alerts match them. It
// returns "" for nil and "other" for a reason it does not know.
func ReasonCode(reason error) string {
	if reason == nil {
		return ""
	}
	for _, r := range reasonCodes {
		if errors.Is(reason, r.err) {
			return r.code
		}
	}
	return "other"
}
