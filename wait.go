package retrybudget

import (
	"math/rand/v2"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// newBackOff returns the exponential schedule of one call. Elapsed time is
// not its concern (MaxElapsedTime 0): the call checks its own deadline.
func newBackOff(cfg *Config) *backoff.ExponentialBackOff {
	b := &backoff.ExponentialBackOff{
		InitialInterval:     cfg.BaseDelay,
		RandomizationFactor: cfg.Jitter,
		Multiplier:          2,
		MaxInterval:         cfg.MaxDelay,
		Stop:                backoff.Stop,
		Clock:               backoff.SystemClock,
	}
	b.Reset()
	return b
}

// waitPlan is the decision about the wait before the next attempt.
type waitPlan struct {
	// delay is how long to wait.
	delay time.Duration
	// retryAfter is the wait the provider asked for; 0 when it gave none.
	retryAfter time.Duration
	// at is when the next attempt would start.
	at time.Time
	// stop is non-nil when the wait must not happen: ErrWaitTooLong or
	// ErrDeadline.
	stop error
}

// planWait decides the wait before the next attempt. The delay is the
// backoff delay capped at MaxDelay, raised to the provider's Retry-After
// (RFC 9110 §10.2.3: never sooner than asked) plus a random spread of up to
// Jitter×BaseDelay, so a fleet told the same date does not return at one
// instant. A Retry-After beyond MaxWait, or a wait that would end at or past
// the deadline, stops the call at once instead of sleeping into it.
func planWait(cfg *Config, backoffDelay time.Duration, now, retryAt, deadline time.Time) waitPlan {
	p := waitPlan{delay: min(backoffDelay, cfg.MaxDelay)}
	if !retryAt.IsZero() {
		p.retryAfter = max(retryAt.Sub(now), 0)
		if p.retryAfter > cfg.MaxWait {
			p.at = retryAt
			p.stop = ErrWaitTooLong
			return p
		}
		if p.retryAfter >= p.delay {
			p.delay = p.retryAfter + spread(cfg)
		}
	}
	p.at = now.Add(p.delay)
	if !deadline.IsZero() && !p.at.Before(deadline) {
		p.stop = ErrDeadline
	}
	return p
}

// spread returns a random extra wait in [0, Jitter×BaseDelay].
func spread(cfg *Config) time.Duration {
	n := int64(cfg.Jitter * float64(cfg.BaseDelay))
	if n <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(n + 1))
}
