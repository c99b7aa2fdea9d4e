package retrybudget

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/retrybudget/retrybudget/limiter"
)

// limitGate is the rate limiter's gate before every attempt, first
// attempts and retries alike. It holds what one call needs to ask the
// limiter and reports what it decided; the call loop writes the Outcome.
type limitGate struct {
	lim       limiter.Limiter
	req       limiter.Request // the boundary and the tenant
	caller    *http.Request   // for the Observer
	routeName string          // for the Observer
	clock     clock
	maxWait   time.Duration
	observer  *Observer
}

// admission is the gate's answer. stop is nil when the attempt may go.
type admission struct {
	// stop is ErrRateLimited when the limiter's wait cannot fit the
	// deadline or MaxWait, ErrLimiter when the limiter cannot decide,
	// ErrDeadline or ErrWaitTooLong when the call's bound ended the
	// limiter's answer, or the context's error.
	stop error
	// cause is the limiter's error, if any.
	cause error
	// retryAt, with ErrRateLimited, is when the limiter expects room.
	retryAt time.Time
	// waited is the call's waits so far, this admission's included.
	waited time.Duration
	// delayed reports that the limiter made the call wait before
	// admitting it: a refusal slept out, or a wait inside Allow
	// (limiter.Decision.Waited, a fair queue's slot).
	delayed bool
}

// admit waits on the limiter while the wait fits the deadline and MaxWait
// (all waits of the call counted together, waited of them before this
// admission), and reports why not otherwise.
func (g *limitGate) admit(ctx context.Context, deadline time.Time, waited time.Duration) admission {
	delayed := false
	for {
		d, took, bound, err := g.allow(ctx, deadline, waited)
		waited += took
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return admission{stop: ctxErr, cause: err, waited: waited}
			}
			if errors.Is(err, limiter.ErrUnavailable) {
				// An outage is ErrLimiter whatever the store's error:
				// a Redis timeout unwraps to context.DeadlineExceeded,
				// and must not read as the call's bound below.
				return admission{stop: ErrLimiter, cause: err, waited: waited}
			}
			if errors.Is(err, context.DeadlineExceeded) {
				// The call's bound ended Allow before it answered: a
				// round trip that took too long, or a wait inside it
				// (a fair queue's slot) cut short. Nothing was
				// refused, so it is not a rate limit, which names when
				// the limiter expects room: a limiter whose wait does
				// not fit says so at once, with a Decision and its
				// RetryAfter (limiter.FairQueue does).
				return admission{stop: bound, cause: err, waited: waited}
			}
			return admission{stop: ErrLimiter, cause: err, waited: waited}
		}
		if d.Allowed {
			if d.Waited > 0 {
				// The limiter made the call wait inside Allow (a fair
				// queue's slot): a wait like any other, reported as one.
				g.limited(d, d.Waited)
			}
			return admission{waited: waited, delayed: delayed || d.Waited > 0}
		}
		now := g.clock.Now()
		wait := max(d.RetryAfter, time.Millisecond)
		at := now.Add(wait)
		if !d.CooldownUntil.IsZero() && d.CooldownUntil.After(at) {
			at = d.CooldownUntil
			wait = at.Sub(now)
		}
		g.limited(d, wait)
		if waited+wait > g.maxWait || (!deadline.IsZero() && !at.Before(deadline)) {
			return admission{stop: ErrRateLimited, retryAt: at, waited: waited}
		}
		waited, delayed = waited+wait, true
		if err := g.clock.Sleep(ctx, wait); err != nil {
			return admission{stop: err, cause: err, waited: waited}
		}
	}
}

// limited reports the limiter's decision d and the call's wait for it to
// the Observer.
func (g *limitGate) limited(d limiter.Decision, wait time.Duration) {
	if obs := g.observer.Limited; obs != nil {
		obs(LimitEvent{Request: g.caller, Route: g.routeName, Boundary: g.req.Boundary, Decision: d, Wait: wait})
	}
}

// allow asks the limiter once, under a context that ends at the call's
// deadline or when MaxWait is used up, whichever comes first: a limiter
// that waits inside Allow (limiter.RedisConfig.Queue blocks until the
// call's slot) must not wait past the Transport's bounds. took is the
// time Allow spent, a wait of the call like any other; bound is the
// reason for the bound that ends its context, ErrDeadline or
// ErrWaitTooLong.
func (g *limitGate) allow(ctx context.Context, deadline time.Time, waited time.Duration) (d limiter.Decision, took time.Duration, bound, err error) {
	start := g.clock.Now()
	left, bound := g.maxWait-waited, ErrWaitTooLong
	if !deadline.IsZero() && deadline.Sub(start) <= left {
		left, bound = deadline.Sub(start), ErrDeadline
	}
	actx, cancel := context.WithTimeout(ctx, max(left, 0))
	d, err = g.lim.Allow(actx, g.req)
	cancel()
	return d, max(g.clock.Now().Sub(start), 0), bound, err
}

// cooldown pauses the whole boundary when the provider said when to come
// back on a capacity answer, or that the quota is spent until a reset, so
// every worker sharing it stops at once, and the boundary's scope when the
// classifier asked for it. A failure to store the pause only loses that
// fleet-wide benefit.
func (g *limitGate) cooldown(ctx context.Context, cls Classification) {
	until := cls.PauseUntil
	if cls.Class == ClassCapacity && cls.RetryAt.After(until) {
		until = cls.RetryAt
	}
	if scopeUntil := cls.PauseScopeUntil; !scopeUntil.IsZero() {
		g.pause(ctx, limiter.Scope(g.req.Boundary), scopeUntil)
		if !until.After(scopeUntil) {
			// The scope's pause holds the boundary as long: one round
			// trip, not two.
			return
		}
	}
	if !until.IsZero() {
		g.pause(ctx, g.req.Boundary, until)
	}
}

// pause asks the limiter to pause boundary until the given time and tells
// the Observer.
func (g *limitGate) pause(ctx context.Context, boundary string, until time.Time) {
	if obs := g.observer.Cooldown; obs != nil {
		obs(LimitEvent{Request: g.caller, Route: g.routeName, Boundary: boundary, Until: until})
	}
	_ = g.lim.Cooldown(ctx, boundary, until)
}
