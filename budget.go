package retrybudget

import (
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
	if ctxErr := c.req.Context().Err(); ctxErr != nil {
		return waitPlan{stop: ctxErr}, false
	}
	switch {
	case cls.Hint == HintNoRetry:
		return waitPlan{stop: ErrRejected}, false
	case cls.Hint == HintRetry:
	case cls.Class == ClassBusiness:
		return waitPlan{stop: ErrRejected}, false
	case !cls.retryable(c.repeatable):
		return waitPlan{stop: ErrUncertain}, false
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
	case c.led != nil && c.led.lostLease():
		// Another worker took the action over: it is the owner now, and
		// a retry from here would race it.
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
