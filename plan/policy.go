package plan

import (
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/budget"
	"github.com/retrybudget/retrybudget/internal/schedule"
)

// DefaultAttemptDuration is how long a failing attempt is assumed to take
// when the Policy gives no AttemptDuration. A Config without an
// AttemptTimeout does not bound an attempt at all, so a worst case needs
// some figure; one second is a plain guess at a slow failure, not a bound.
const DefaultAttemptDuration = time.Second

// DefaultFirstAttemptsPerSec is the rate of first attempts assumed for the
// amplification when the Policy gives none.
const DefaultFirstAttemptsPerSec = 100

// Policy is the retry policy a Plan is made for, and what the Plan assumes
// of the provider and of the traffic. Its policy fields mean what the
// retrybudget.Config and budget.Config fields of the same names
// mean, zero values and clamps included, so a Policy built with FromConfig
// has the Transport's waits.
type Policy struct {
	// MaxAttempts, BaseDelay, MaxDelay, Jitter, MaxWait and Deadline are
	// the schedule: each means what the retrybudget.Config field of the
	// same name means, its zero value and clamps included, since both
	// apply one rule (Policy.WithDefaults).
	MaxAttempts         int
	BaseDelay, MaxDelay time.Duration
	Jitter              float64
	MaxWait, Deadline   time.Duration

	// Budget is the retry budget's rule. Its zero fields take the
	// budget.Config defaults (10%, 10 retries per second, 10s).
	Budget budget.Config
	// NoBudget models budget.Unlimited: every retry is allowed.
	NoBudget bool

	// AttemptDuration is how long every failing attempt is assumed to
	// take, as when each one runs into its AttemptTimeout. Zero means
	// DefaultAttemptDuration; a negative value means attempts take no
	// time.
	AttemptDuration time.Duration
	// RetryAfter is the Retry-After the provider is assumed to send with
	// every failure. Zero means it sends none.
	RetryAfter time.Duration
	// FirstAttemptsPerSec is the rate of first attempts to the
	// destination, counted where the budget counts them: one process for
	// a budget.Local, the fleet for a shared budget (package budget). Zero
	// or less means DefaultFirstAttemptsPerSec.
	FirstAttemptsPerSec float64
}

// FromConfig returns the Policy of cfg: its backoff, attempts, waits and
// deadline, with cfg.AttemptTimeout as the AttemptDuration (zero, as in a
// Config without one, then means DefaultAttemptDuration). A nil Budget is
// the default rule and budget.Unlimited sets NoBudget; any other Budget
// keeps its rule to itself (a budget.Local does not export its
// budget.Config), so the Policy assumes the default rule and the caller
// should set Budget to what it built the Budget with.
func FromConfig(cfg retrybudget.Config) Policy {
	p := Policy{
		MaxAttempts:     cfg.MaxAttempts,
		BaseDelay:       cfg.BaseDelay,
		MaxDelay:        cfg.MaxDelay,
		Jitter:          cfg.Jitter,
		MaxWait:         cfg.MaxWait,
		Deadline:        cfg.Deadline,
		AttemptDuration: cfg.AttemptTimeout,
	}
	switch cfg.Budget.(type) {
	case budget.Unlimited, *budget.Unlimited:
		p.NoBudget = true
	}
	return p
}

// WithDefaults returns p with every zero field replaced by its default and
// every out-of-range value clamped, as the Transport does.
func (p Policy) WithDefaults() Policy {
	// The Transport's own schedule rule (internal/schedule), not a copy.
	s := p.schedule().WithDefaults()
	p.MaxAttempts, p.BaseDelay, p.MaxDelay, p.Jitter, p.MaxWait, p.Deadline =
		s.MaxAttempts, s.BaseDelay, s.MaxDelay, s.Jitter, s.MaxWait, s.Deadline
	// The rule in force, "none" as zero, exactly as a budget.Local applies it.
	r := p.Budget.Rule()
	p.Budget = budget.Config(r)
	switch {
	case p.AttemptDuration == 0:
		p.AttemptDuration = DefaultAttemptDuration
	case p.AttemptDuration < 0:
		p.AttemptDuration = 0
	}
	p.RetryAfter = max(p.RetryAfter, 0)
	if p.FirstAttemptsPerSec <= 0 {
		p.FirstAttemptsPerSec = DefaultFirstAttemptsPerSec
	}
	return p
}

// schedule returns the retry schedule p describes.
func (p Policy) schedule() schedule.Schedule {
	return schedule.Schedule{MaxAttempts: p.MaxAttempts, BaseDelay: p.BaseDelay, MaxDelay: p.MaxDelay,
		Jitter: p.Jitter, MaxWait: p.MaxWait, Deadline: p.Deadline}
}
