package retrybudget

import (
	"context"
	"errors"
	"time"

	"github.com/retrybudget/retrybudget/budget"
)

// How a call meets Config.Overload (budget.Overload): before its first
// attempt, overloadAllows asks whether the attempt could be answered in
// time behind the provider's queue; after every attempt, recordOverload
// says whether it was. Both cost one atomic load while no destination has
// run out of time lately, and read no clock then.
//
// The evidence is kept per destination and tenant (the Action's), so that
// one tenant's requests, slow by what they ask, never get another
// tenant's calls refused (see budget.Overload).

// overloadAllows reports whether o lets the first attempt of a call to
// dest go. The attempt's patience is AttemptTimeout, shrunk to the time
// left before deadline; a call with neither waits as long as it takes and
// is never refused, nor is one already past its deadline (the call loop
// ends it with ErrDeadline).
func overloadAllows(o *budget.Overload, clk clock, attemptTimeout time.Duration, dest, tenant string, deadline time.Time) bool {
	if o.Quiet() {
		return true
	}
	now := clk.Now()
	patience := attemptTimeout
	if !deadline.IsZero() {
		left := deadline.Sub(now)
		if left <= 0 {
			return true
		}
		if patience <= 0 || left < patience {
			patience = left
		}
	}
	return o.AllowTenant(dest, tenant, patience, now)
}

// recordOverload tells o how an attempt of tenant to dest that started at start and
// ended at end with err ended: answered (any response or error of its
// own), or out of time, the attempt's context ending at its deadline before
// an answer came. The patience of an attempt out of time is how long it
// waited, known when its start was read (see send); a zero end is read from
// clk.
func recordOverload(o *budget.Overload, clk clock, dest, tenant string, err error, start, end time.Time) {
	timedOut := err != nil && errors.Is(err, context.DeadlineExceeded)
	if o.Quiet() && !timedOut {
		return
	}
	if end.IsZero() {
		end = clk.Now()
	}
	var patience time.Duration
	if timedOut && !start.IsZero() {
		patience = end.Sub(start)
	}
	o.RecordTenant(dest, tenant, patience, timedOut, end)
}

// tenant returns the tenant of the call's Action; empty without one.
func (c *call) tenant() string {
	if a, ok := ActionFrom(c.req.Context()); ok && !c.p.noAction {
		return a.Tenant
	}
	return ""
}
