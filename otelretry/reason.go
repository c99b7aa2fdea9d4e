package otelretry

import (
	"context"
	"errors"

	"github.com/retrybudget/retrybudget"
)

// reasonCode returns the code that names an Outcome's Reason in metrics,
// found by identity with errors.Is, so a reworded message changes nothing.
// The codes are stable: dashboards and alerts match them. A reason this
// package does not know yet is "other".
func reasonCode(reason error) string {
	switch {
	case errors.Is(reason, retrybudget.ErrAttemptsExhausted):
		return "attempts_exhausted"
	case errors.Is(reason, retrybudget.ErrDeadline):
		return "deadline"
	case errors.Is(reason, retrybudget.ErrWaitTooLong):
		return "wait_too_long"
	case errors.Is(reason, retrybudget.ErrUncertain):
		return "uncertain"
	case errors.Is(reason, retrybudget.ErrRejected):
		return "rejected"
	case errors.Is(reason, retrybudget.ErrBudgetExhausted):
		return "budget_exhausted"
	case errors.Is(reason, retrybudget.ErrThrottled):
		return "throttled"
	case errors.Is(reason, retrybudget.ErrRateLimited):
		return "rate_limited"
	case errors.Is(reason, retrybudget.ErrLimiter):
		return "limiter"
	case errors.Is(reason, retrybudget.ErrBodyNotReplayable):
		return "body_not_replayable"
	case errors.Is(reason, retrybudget.ErrPending):
		return "pending"
	case errors.Is(reason, retrybudget.ErrConflict):
		return "conflict"
	case errors.Is(reason, retrybudget.ErrLedger):
		return "ledger"
	case errors.Is(reason, context.Canceled):
		return "canceled"
	case errors.Is(reason, context.DeadlineExceeded):
		return "deadline_exceeded"
	}
	return "other"
}
