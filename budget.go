package retrybudget

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
	case !cls.Class.retryable(c.repeatable):
		return waitPlan{stop: ErrUncertain}, false
	}
	if c.bo == nil {
		c.bo = newBackOff(&c.t.cfg)
	}
	plan = planWait(&c.t.cfg, c.bo.NextBackOff(), c.t.clock.Now(), cls.RetryAt, c.deadline)
	switch {
	case plan.stop != nil:
	case c.out.Attempts >= c.t.cfg.MaxAttempts:
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

// withdraw asks the Budget for one retry and reports the decision to the
// Observer.
func (c *call) withdraw() bool {
	d := c.t.cfg.Budget.Withdraw(c.req.Context(), c.dest)
	if obs := c.t.cfg.Observer.Budget; obs != nil {
		obs(BudgetEvent{Request: c.req, Destination: c.dest, Decision: d})
	}
	return d.Allowed
}
