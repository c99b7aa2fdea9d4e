package retrybudget

import (
	"errors"
	"net/http"
)

// Step is what a worker does with an action after one call through the
// Transport, as Next reads the call's result. Every worker reads outcomes
// the same way with it: a River job (riverjobs.Decide), a queue consumer
// or a cron loop.
type Step int

const (
	// StepDone: the call succeeded, or was answered with the stored
	// response of an earlier run (Outcome.Replayed). Nothing is left to do.
	StepDone Step = iota
	// StepRetry: nothing was applied, or running the action again is safe
	// (under an Action with a ledger a second run is replayed or refused,
	// never sent twice). Run the same Action again, not before
	// Outcome.RetryAt; a zero RetryAt leaves the wait to the worker's own
	// backoff.
	StepRetry
	// StepStop: a final answer that running again cannot change: the
	// provider rejected the request (ErrRejected), the action's key was
	// reused for another request (ErrConflict), the Action is invalid
	// (ErrInvalidAction), or the answer is a redirect nobody followed
	// (ErrRedirectNotFollowed). Report it; do not retry.
	StepStop
	// StepHold: the request may have been applied and the outcome is not
	// known (ErrUncertain). Never run it again blindly: a Reconciler, or
	// an operator, settles it (see docs/operating.md).
	StepHold
)

var stepNames = [...]string{StepDone: "done", StepRetry: "retry", StepStop: "stop", StepHold: "hold"}

// String returns the step's name: done, retry, stop or hold.
func (s Step) String() string {
	if s >= 0 && int(s) < len(stepNames) {
		return stepNames[s]
	}
	return "unknown"
}

// Next returns what to do after a call that returned resp and err, and the
// Outcome it read that from. It reads the Outcome the Transport attached:
// from an *Error in err's chain, else from resp (OutcomeOf). For an SDK
// that hides both, read the captured record with the SDK's error instead:
// out.Next(err) (see Captured.Next).
//
// The rule, by the Outcome's Reason: none is StepDone; ErrUncertain is
// StepHold; ErrRejected, ErrConflict and ErrInvalidAction are StepStop;
// every other reason (attempts, deadline, budget, rate limit, a pending
// owner, an unavailable ledger or limiter, the caller's context) is
// StepRetry at RetryAt. A call that may have been applied and is not safe
// to repeat ends with ErrUncertain whatever stopped it, the caller's
// context included, so it is never StepRetry. An error that carries no
// Outcome (the worker's own, or one the Transport never saw) is StepRetry
// with a zero RetryAt.
// A response that did not come through a Transport is read by its status
// alone: StepDone below 400, StepStop for a rejection (ClassBusiness),
// else StepRetry.
//
// A redirect that reaches the worker was not followed: http.Client follows
// every one it can. Its request was not applied at the new location (RFC
// 9110 §15.4: a 301, 302, 307 or 308 names where to send it), so it is
// StepStop with ErrRedirectNotFollowed, never StepDone; a 303 (See Other,
// §15.4.4: the request was applied) and a 304 (a conditional GET's
// answer, §15.4.5) are answers, StepDone.
func Next(resp *http.Response, err error) (Step, Outcome) {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e.Outcome.advise()
	case err != nil:
		return StepRetry, Outcome{}
	}
	if o, ok := OutcomeOf(resp); ok {
		return o.advise()
	}
	if resp == nil {
		return StepRetry, Outcome{}
	}
	o := Outcome{Class: classifyStatus(resp.StatusCode), StatusCode: resp.StatusCode}
	switch o.Class {
	case ClassSuccess:
		return o.advise()
	case ClassBusiness:
		return StepStop, o
	}
	return StepRetry, o
}

// advise is Next's rule for an Outcome the Transport produced, and the
// Outcome as the worker reads it: an unfollowed redirect's with
// ErrRedirectNotFollowed as its Reason. The Transport cannot set that
// Reason itself: it does not know whether http.Client follows the
// redirect, only a 3xx that reaches the worker tells.
func (o Outcome) advise() (Step, Outcome) {
	if o.Reason == nil && unfollowedRedirect(o.StatusCode) {
		o.Reason = ErrRedirectNotFollowed
	}
	return o.step(), o
}

// unfollowedRedirect reports whether a final answer of status is a
// redirect that was not followed: a 3xx other than 303 and 304, which are
// answers in their own right.
func unfollowedRedirect(status int) bool {
	return status >= 300 && status < 400 && status != http.StatusSeeOther && status != http.StatusNotModified
}

// step is Next's rule for an Outcome's Reason; advise reads its status
// first.
func (o Outcome) step() Step {
	switch {
	case o.Reason == nil:
		if unfollowedRedirect(o.StatusCode) {
			return StepStop
		}
		return StepDone
	case errors.Is(o.Reason, ErrUncertain):
		return StepHold
	case errors.Is(o.Reason, ErrRejected), errors.Is(o.Reason, ErrConflict), errors.Is(o.Reason, ErrInvalidAction),
		errors.Is(o.Reason, ErrRedirectNotFollowed):
		return StepStop
	}
	return StepRetry
}
