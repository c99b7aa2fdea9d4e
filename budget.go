package retrybudget

import (
	"errors"
	"time"

	"github.com/retrybudget/retrybudget/internal/schedule"
)

// How a call spends its retry budget and its deadline: after a failed
// attempt, next decides whether another may follow and when; withdraw then
// spends one credit of the Budget for it.

// next plans the wait before the attempt after one classified cls, and
// reports whether the plan's time is a new Outcome.RetryAt (planned). A
// plan with stop set ends the call: the context is done, the class or the
// provider's hint forbids a retry, or the schedule has no room left
// (MaxAttempts, MaxWait, the deadline, a body that cannot be replayed, a
// lease lost to another worker).
func (c *call) next(cls Classification) (plan waitPlan, planned bool) {
	var final error
	switch {
	case cls.Hint == HintNoRetry:
		final = ErrRejected
	case cls.Hint == HintRetry:
	case cls.Class == ClassBusiness:
		final = ErrRejected
	case !cls.retryable(c.repeatable):
		final = ErrUncertain
	}
	if ctxErr := c.req.Context().Err(); ctxErr != nil {
		if final == ErrUncertain {
			// The caller's end does not undo the attempt: it may have
			// been applied and is not safe to repeat, so a worker told
			// to retry it (Next's StepRetry) would send it again.
			return waitPlan{stop: ErrUncertain, cause: ctxErr}, false
		}
		return waitPlan{stop: ctxErr}, false
	}
	if final != nil {
		return waitPlan{stop: final}, false
	}
	sched := c.p.cfg.schedule()
	if c.bo == nil {
		c.bo = sched.NewBackOff()
	}
	plan = planWait(sched.Wait(c.bo.NextBackOff(), c.p.clock.Now(), cls.RetryAt, c.deadline))
	switch {
	case plan.stop != nil:
	case c.waited+plan.delay > c.p.cfg.MaxWait:
		// No call waits longer than MaxWait in all, deadline or not.
		plan.stop = ErrWaitTooLong
	case c.out.Attempts >= c.p.cfg.MaxAttempts:
		plan.stop = ErrAttemptsExhausted
	case !c.body.replayable():
		plan.stop = ErrBodyNotReplayable
	case c.led != nil && !c.led.recordSend(c.req.Context()):
		// A retry follows: the send just made goes in the history first,
		// fenced. Another worker took the action over: it is the owner
		// now, and a retry from here would race it.
		plan.stop = ErrPending
	}
	return plan, true
}

// waitPlan is the decision about the wait before the next attempt.
type waitPlan struct {
	// delay is how long to wait.
	delay time.Duration
	// retryAfter is the wait the provider asked for; 0 when it gave none.
	retryAfter time.Duration
	// at is when the next attempt would start.
	at time.Time
	// stop is non-nil when the call must end now.
	stop error
	// cause, with stop ErrUncertain, is the context's error that ended
	// the call (see withCause).
	cause error
}

// planWait is the schedule's wait w, with its stop as the call's reason:
// ErrWaitTooLong for a Retry-After beyond MaxWait, ErrDeadline for a wait
// that would end at or past the deadline.
func planWait(w schedule.Wait) waitPlan {
	p := waitPlan{delay: w.Delay, retryAfter: w.RetryAfter, at: w.At}
	switch w.Stop {
	case schedule.TooLong:
		p.stop = ErrWaitTooLong
	case schedule.PastDeadline:
		p.stop = ErrDeadline
	}
	return p
}

// unsentResendReason is the reason an SDK's numbered re-send that ends
// before sending anything gives up with, and its cause. The SDK's earlier
// sends of the call, given up on elsewhere or too long ago to be
// remembered, may have applied it: a request that is not safe to repeat
// and would end with a reason Next reads as StepRetry is ErrUncertain
// instead (StepHold), its own reason kept in the cause, since the worker's
// next run would be a new call, sent again. A call under a ledger is left
// alone: every earlier send under its Action went through the ledger,
// which answers the next run.
func (c *call) unsentResendReason(reason, cause error) (error, error) {
	if c.repeatable || c.led != nil || (Outcome{Reason: reason}).step() != StepRetry {
		return reason, cause
	}
	return ErrUncertain, withCause(cause, reason)
}

// withCause returns err with cause added to what errors.Is finds in it:
// an uncertain give-up keeps the reason it would have had (the context's
// end, the deadline) findable.
func withCause(err, cause error) error {
	if cause == nil || errors.Is(err, cause) {
		return err
	}
	if err == nil {
		return cause
	}
	return errors.Join(err, cause)
}
