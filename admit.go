package retrybudget

import (
	"context"
	"net/http"
	"time"

	"github.com/retrybudget/retrybudget/limiter"
)

// admit waits on the Limiter before an attempt, first attempts and retries
// alike. It waits only while the wait fits the deadline and MaxWait;
// otherwise it returns ErrRateLimited at once, with the time the limiter
// named in c.out.RetryAt. It returns ErrLimiter when the limiter cannot
// decide (its own policy chose to fail closed), with the cause.
func (c *call) admit() (reason, cause error) {
	lim := c.t.cfg.Limiter
	if lim == nil {
		return nil, nil
	}
	ctx := c.req.Context()
	for {
		d, err := lim.Allow(ctx, limiter.Request{Boundary: c.boundary, Owner: c.owner})
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return ctxErr, err
			}
			return ErrLimiter, err
		}
		if d.Allowed {
			return nil, nil
		}
		now := c.t.clock.Now()
		wait := max(d.RetryAfter, time.Millisecond)
		at := now.Add(wait)
		if !d.CooldownUntil.IsZero() && d.CooldownUntil.After(at) {
			at = d.CooldownUntil
			wait = at.Sub(now)
		}
		if obs := c.t.cfg.Observer.Limited; obs != nil {
			obs(LimitEvent{Request: c.req, Route: c.t.route, Boundary: c.boundary, Decision: d, Wait: wait})
		}
		if c.waited+wait > c.t.cfg.MaxWait || (!c.deadline.IsZero() && !at.Before(c.deadline)) {
			c.out.RetryAt = at
			return ErrRateLimited, nil
		}
		c.waited += wait
		if err := c.t.clock.Sleep(ctx, wait); err != nil {
			return err, err
		}
	}
}

// cooldown pauses the whole boundary when the provider said when to come
// back on a capacity answer, or that the quota is spent until a reset, so
// every worker sharing it stops at once. A failure to store the pause only
// loses that fleet-wide benefit.
func (c *call) cooldown(cls Classification) {
	lim := c.t.cfg.Limiter
	if lim == nil {
		return
	}
	until := cls.PauseUntil
	if cls.Class == ClassCapacity && cls.RetryAt.After(until) {
		until = cls.RetryAt
	}
	if until.IsZero() {
		return
	}
	if obs := c.t.cfg.Observer.Cooldown; obs != nil {
		obs(CooldownEvent{Request: c.req, Route: c.t.route, Boundary: c.boundary, Until: until})
	}
	_ = lim.Cooldown(c.req.Context(), c.boundary, until)
}

// CooldownEvent describes a pause of a whole limiter boundary.
type CooldownEvent struct {
	// Request is the caller's request whose answer caused the pause.
	Request *http.Request
	// Route names the Route that matched the request; empty when none did.
	Route string
	// Boundary is the paused limiter boundary.
	Boundary string
	// Until is the end of the pause.
	Until time.Time
}

// LimitEvent describes a wait imposed by the rate limiter.
type LimitEvent struct {
	// Request is the caller's request.
	Request *http.Request
	// Route names the Route that matched the request; empty when none did.
	Route string
	// Boundary is the limiter boundary the request counts against.
	Boundary string
	// Decision is the limiter's answer.
	Decision limiter.Decision
	// Wait is how long the Transport waits (or would wait) before asking
	// again.
	Wait time.Duration
}

// ownerOf returns the tenant of the action in ctx, for the limiter's
// per-owner share.
func ownerOf(ctx context.Context) string {
	a, _ := ActionFrom(ctx)
	return a.Tenant
}
