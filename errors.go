package retrybudget

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Reasons the Transport stops. Each is the Reason of an Outcome and matches
// an *Error with errors.Is; ErrInvalidAction and ErrBodyUnreadable refuse a
// request before any attempt (an *Error with no attempts, class not-sent).
var (
	// ErrAttemptsExhausted means every allowed attempt failed with a
	// retryable class.
	ErrAttemptsExhausted = errors.New("retrybudget: attempts exhausted")
	// ErrDeadline means the next attempt could not start before the
	// deadline (the context's or Config.Deadline), so the Transport gave up
	// at once instead of sleeping into it. RetryAt says when to come back;
	// it is zero when the rate limiter had not answered by the deadline
	// (a slow store): nothing was refused then.
	ErrDeadline = errors.New("retrybudget: retry cannot fit the deadline")
	// ErrWaitTooLong means the provider asked for a wait longer than
	// Config.MaxWait, or the call's waits together would pass it, the
	// time spent waiting for the rate limiter's answer included. RetryAt
	// is the time to come back: the provider's, when it named one.
	ErrWaitTooLong = errors.New("retrybudget: provider asked to wait longer than allowed")
	// ErrUncertain means the last attempt may have been applied by the
	// provider and repeating it is not safe (no idempotency key and a
	// method that is not idempotent). Reconcile before trying again. It
	// is the reason whatever ended the call then: the caller's context
	// ending after the request was written, or an SDK's numbered re-send
	// ending unsent after earlier sends; the *Error's Cause keeps that
	// error (errors.Is finds context.DeadlineExceeded, say).
	ErrUncertain = errors.New("retrybudget: outcome uncertain: the request may have been applied")
	// ErrRejected means the provider rejected the request (ClassBusiness);
	// repeating it unchanged will not help.
	ErrRejected = errors.New("retrybudget: rejected by the provider")
	// ErrBudgetExhausted means the retry budget refused a retry: the
	// provider is failing for many calls, and retrying them all would
	// multiply the load. The last response or error is returned at once.
	ErrBudgetExhausted = errors.New("retrybudget: retry budget exhausted")
	// ErrThrottled means adaptive throttling rejected the call before it
	// was sent, because the provider has been refusing most attempts
	// (Config.Throttle), or because most recent attempts ran out of time
	// behind its queue and this call could wait no longer than they did
	// (Config.Overload).
	ErrThrottled = errors.New("retrybudget: throttled locally: the provider is refusing most requests")
	// ErrRateLimited means the shared rate limit (Config.Limiter) would
	// make the call wait past the deadline or MaxWait; RetryAt is when the
	// limiter expects room. Nothing was sent for the refused attempt.
	ErrRateLimited = errors.New("retrybudget: rate limit wait cannot fit the deadline")
	// ErrLimiter means the rate limiter could not decide (for example its
	// store is down and it fails closed); the Cause says why.
	ErrLimiter = errors.New("retrybudget: rate limiter unavailable")
	// ErrPending means the action is in progress in another call (its
	// ledger lease is alive), or may still be applied by the provider
	// (inside the settle time of its last send, Config.SettleTime);
	// nothing was sent. RetryAt is when the other call can have finished
	// (its usual run time), at the latest when its lease ends, or when the
	// settle time ends. The Cause is a *ledger.Error.
	ErrPending = errors.New("retrybudget: action in progress elsewhere")
	// ErrConflict means the action's key was used before for a different
	// request (another fingerprint); nothing was sent.
	ErrConflict = errors.New("retrybudget: action key reused for a different request")
	// ErrLedger means the action ledger could not be read or written
	// before sending; nothing was sent.
	ErrLedger = errors.New("retrybudget: action ledger unavailable")
	// ErrBodyNotReplayable means a retry was needed but the request body
	// could not be sent again: it had no GetBody and was larger than
	// Config.MaxBodyBuffer.
	ErrBodyNotReplayable = errors.New("retrybudget: request body cannot be replayed")
	// ErrInvalidAction means the context carries an Action with an empty
	// Key: nothing is sent.
	ErrInvalidAction = errors.New("retrybudget: action has an empty key")
	// ErrBodyUnreadable means the request body could not be read to
	// buffer it for retries; nothing was sent. The Cause is the read error.
	ErrBodyUnreadable = errors.New("retrybudget: request body unreadable")

	// ErrRedirectNotFollowed is the Reason Next reads into the Outcome of
	// a redirect that reached the worker: http.Client follows every
	// redirect it can, so a 3xx it returns was not followed (a POST whose
	// body it cannot rewind, CheckRedirect, no Location), and the request
	// was not applied at the new location. A 303 (applied, see other) and
	// a 304 (a conditional GET's answer) are answers, not this. Next says
	// StepStop: running it again gets the same redirect.
	ErrRedirectNotFollowed = errors.New("retrybudget: the redirect was not followed")
)

// Error is the error the Transport returns when it gives up without a
// response to return. It carries the Outcome, so errors.As gives the caller
// the class, attempts, key and retry time; it matches the Outcome's Reason
// and the last transport error with errors.Is.
type Error struct {
	Outcome
	// Cause is the last attempt's transport error; nil when the last
	// attempt produced a response.
	Cause error
}

// Error describes the give-up in one line. It leaves out the idempotency
// key, which for an Action is a hash of its tenant, operation and key that
// a reader of a log line could test guesses against; a caller that wants
// it in its logs reads e.Key.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Reason != nil {
		b.WriteString(e.Reason.Error())
	} else {
		b.WriteString("retrybudget: request failed")
	}
	fmt.Fprintf(&b, " (attempts %d, class %s", e.Attempts, e.Class)
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ", status %d", e.StatusCode)
	}
	// The key is left out: an Action's is a UUIDv5 of its tenant,
	// operation and key, which a reader of a log line can test guesses
	// against. Error.Key holds it for a caller that asks.
	if !e.RetryAt.IsZero() {
		fmt.Fprintf(&b, ", retry at %s", e.RetryAt.UTC().Format(time.RFC3339Nano))
	}
	if e.MaybeApplied {
		b.WriteString(", may have been applied")
	}
	b.WriteString(")")
	if e.Cause != nil {
		b.WriteString(": ")
		b.WriteString(e.Cause.Error())
	}
	return b.String()
}

// Unwrap returns the Reason and the Cause, for errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	errs := make([]error, 0, 2)
	if e.Reason != nil {
		errs = append(errs, e.Reason)
	}
	if e.Cause != nil {
		errs = append(errs, e.Cause)
	}
	return errs
}

// Err returns nil when the call succeeded, else an *Error carrying o.
func (o Outcome) Err() error {
	if o.Reason == nil {
		return nil
	}
	return &Error{Outcome: o}
}
