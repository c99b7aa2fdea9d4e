// Package schedule is the retry schedule written once, for the Transport
// (package retrybudget) and the planner (package plan): the defaults of its
// knobs and the rule that decides the wait before the next attempt. The
// Transport samples it; the planner walks the ranges of the same rule.
package schedule

import (
	"math/rand/v2"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// The defaults of a Schedule's zero fields.
const (
	DefaultMaxAttempts = 4
	DefaultBaseDelay   = 200 * time.Millisecond
	DefaultMaxDelay    = 30 * time.Second
	DefaultJitter      = 0.5
	DefaultMaxWait     = 60 * time.Second
)

// Schedule is the retry schedule of one call, as configured by
// retrybudget.Config and plan.Policy, whose fields of the same names it
// holds with the same meaning.
type Schedule struct {
	MaxAttempts                            int
	Jitter                                 float64
	BaseDelay, MaxDelay, MaxWait, Deadline time.Duration
}

// WithDefaults returns s with every zero field replaced by its default and
// every out-of-range value clamped: a negative MaxAttempts means 1, a
// negative Jitter none, a Jitter above 1 means 1, a negative Deadline none.
func (s Schedule) WithDefaults() Schedule {
	s.MaxAttempts = Knob(s.MaxAttempts, DefaultMaxAttempts, 1)
	if s.BaseDelay <= 0 {
		s.BaseDelay = DefaultBaseDelay
	}
	if s.MaxDelay <= 0 {
		s.MaxDelay = DefaultMaxDelay
	}
	s.Jitter = Fraction(s.Jitter, DefaultJitter)
	if s.MaxWait <= 0 {
		s.MaxWait = DefaultMaxWait
	}
	s.Deadline = max(s.Deadline, 0)
	return s
}

// NewBackOff returns the exponential schedule of one call: BaseDelay
// doubling up to MaxDelay, randomized by Jitter. Elapsed time is not its
// concern (MaxElapsedTime 0): the call checks its own deadline. s must have
// its defaults applied.
func (s Schedule) NewBackOff() *backoff.ExponentialBackOff {
	b := &backoff.ExponentialBackOff{
		InitialInterval:     s.BaseDelay,
		RandomizationFactor: s.Jitter,
		Multiplier:          2,
		MaxInterval:         s.MaxDelay,
		Stop:                backoff.Stop,
		Clock:               backoff.SystemClock,
	}
	b.Reset()
	return b
}

// Stop says why a wait must not happen.
type Stop int

const (
	// Go means the wait may happen.
	Go Stop = iota
	// TooLong means the provider asked for a wait beyond MaxWait.
	TooLong
	// PastDeadline means the wait would end at or past the deadline.
	PastDeadline
)

// Wait is the decision about the wait before the next attempt.
type Wait struct {
	// Delay is how long to wait.
	Delay time.Duration
	// RetryAfter is the wait the provider asked for; 0 when it gave none.
	RetryAfter time.Duration
	// At is when the next attempt would start.
	At time.Time
	// Stop is Go when the wait may happen.
	Stop Stop
}

// Wait decides the wait before the next attempt. The delay is the backoff
// delay capped at MaxDelay, raised to the provider's Retry-After (RFC 9110
// §10.2.3: never sooner than asked) plus a random spread in [0, Spread()],
// so a fleet told the same date does not return at one instant. A
// Retry-After beyond MaxWait, or a wait that would end at or past the
// deadline, stops the call at once instead of sleeping into it. s must have
// its defaults applied; a zero retryAt or deadline means none.
func (s Schedule) Wait(backoffDelay time.Duration, now, retryAt, deadline time.Time) Wait {
	w := Wait{Delay: min(backoffDelay, s.MaxDelay)}
	if !retryAt.IsZero() {
		w.RetryAfter = max(retryAt.Sub(now), 0)
		if w.RetryAfter > s.MaxWait {
			w.At, w.Stop = retryAt, TooLong
			return w
		}
		if w.RetryAfter >= w.Delay {
			w.Delay = w.RetryAfter + s.spread()
		}
	}
	w.At = now.Add(w.Delay)
	if !Fits(w.At, deadline) {
		w.Stop = PastDeadline
	}
	return w
}

// Fits reports whether an attempt starting at at fits before deadline (zero
// means none): starting exactly at the deadline does not.
func Fits(at, deadline time.Time) bool {
	return deadline.IsZero() || at.Before(deadline)
}

// Spread returns the largest random extra wait added to a Retry-After:
// Jitter×BaseDelay.
func (s Schedule) Spread() time.Duration {
	return time.Duration(max(int64(s.Jitter*float64(s.BaseDelay)), 0))
}

// spread returns a random extra wait in [0, Spread()].
func (s Schedule) spread() time.Duration {
	n := int64(s.Spread())
	if n <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(n + 1))
}

// Fraction applies the rule of a fraction knob (Jitter, the budget's
// Percent): zero means def, a negative value none (0), a value above 1 all
// (1).
func Fraction(v, def float64) float64 {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return min(v, 1)
}

// Knob applies the rule of a count knob (MaxAttempts, the budget's
// MinRetriesPerSec): zero means def, a negative value means negative.
func Knob[T int | float64](v, def, negative T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return negative
	}
	return v
}
