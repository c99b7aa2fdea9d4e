package otelretry

import (
	"context"
	"errors"

	"github.com/retrybudget/retrybudget"
)

// reasonCodes name the Transport's give-up reasons in metrics. The codes
// are stable: dashboards and alerts match them. Order matters only where
// errors could match several, which the sentinels do not.
var reasonCodes = []struct {
	err  error
	code string
}{
	{retrybudget.ErrAttemptsExhausted, "attempts_exhausted"},
	{retrybudget.ErrDeadline, "deadline"},
	{retrybudget.ErrWaitTooLong, "wait_too_long"},
	{retrybudget.ErrUncertain, "uncertain"},
	{retrybudget.ErrRejected, "rejected"},
	{retrybudget.ErrBudgetExhausted, "budget_exhausted"},
	{retrybudget.ErrThrottled, "throttled"},
	{retrybudget.ErrRateLimited, "rate_limited"},
	{retrybudget.ErrLimiter, "limiter"},
	{retrybudget.ErrBodyNotReplayable, "body_not_replayable"},
	{retrybudget.ErrPending, "pending"},
	{retrybudget.ErrConflict, "conflict"},
	{retrybudget.ErrLedger, "ledger"},
	{context.Canceled, "canceled"},
	{context.DeadlineExceeded, "deadline_exceeded"},
}

// reasonCode returns the code of an Outcome's Reason: by identity with
// errors.Is, so a reworded message changes nothing; "other" for a reason
// this package does not know yet.
func reasonCode(reason error) string {
	for _, r := range reasonCodes {
		if errors.Is(reason, r.err) {
			return r.code
		}
	}
	return "other"
}
