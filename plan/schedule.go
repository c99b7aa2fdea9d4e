package plan

import (
	"math"
	"time"

	"github.com/retrybudget/retrybudget"
)

// Fit says whether an attempt can start before the call's deadline.
type Fit int

const (
	// Fits means the attempt starts before the deadline however the
	// jitter falls, or that the call has no deadline.
	Fits Fit = iota
	// MayMiss means the attempt is sent only when the waits before it
	// come out short enough; on longer ones the call gives up at once
	// with ErrDeadline instead of sleeping into the deadline.
	MayMiss
	// Never means the attempt is never sent; Attempt.Stop says why.
	Never
)

// String returns "yes", "maybe" or "never".
func (f Fit) String() string {
	switch f {
	case Fits:
		return "yes"
	case MayMiss:
		return "maybe"
	case Never:
		return "never"
	}
	return "Fit(?)"
}

// Attempt is one attempt of a call whose every attempt fails.
type Attempt struct {
	// N is the attempt's number; the first is 1.
	N int
	// WaitMin and WaitMax bound the wait before the attempt: the
	// jittered backoff capped at MaxDelay, raised to the Retry-After when
	// that is longer. Both are zero for the first attempt, and for one
	// that a Retry-After beyond MaxWait stops.
	WaitMin, WaitMax time.Duration
	// Earliest and Latest bound when the attempt starts, measured from
	// the start of the call, every attempt before it having failed after
	// AttemptDuration. They are zero when a Retry-After beyond MaxWait
	// stops the attempt.
	Earliest, Latest time.Duration
	// Fit says whether the attempt can start before the deadline.
	Fit Fit
	// Stop is why a Never attempt is not sent: retrybudget.ErrDeadline
	// or retrybudget.ErrWaitTooLong. It is nil for the others.
	Stop error
}

// Plan is what a Policy does to one call whose every attempt fails.
type Plan struct {
	// Policy is the planned policy with its defaults applied.
	Policy Policy
	// Attempts holds one entry per attempt up to MaxAttempts, so the
	// Plan of a huge MaxAttempts is huge.
	Attempts []Attempt
	// Sendable is the most attempts the call can send: those not Never.
	Sendable int
	// GiveUp is the worst case: the latest time, from its start, at which
	// the call can end.
	GiveUp time.Duration
	// Reason is the error the call gives up with on the path that ends
	// at GiveUp: retrybudget.ErrAttemptsExhausted, ErrDeadline or
	// ErrWaitTooLong. Shorter waits may end it with another.
	Reason error
	// Amplification is the budget's bound on attempts per call during a
	// total outage; see Amplification.
	Amplification float64
}

// Compute returns the Plan of p. It is deterministic: it gives the range
// of every random choice the Transport makes, never a sample.
func Compute(p Policy) Plan {
	p = p.WithDefaults()
	pl := Plan{Policy: p, Attempts: make([]Attempt, 0, p.MaxAttempts)}
	tooLong := p.RetryAfter > p.MaxWait
	bo := newBackoff(p)
	pl.Attempts = append(pl.Attempts, Attempt{N: 1})
	// One attempt past MaxAttempts is worked out but not kept: whether its
	// wait would cross the deadline decides the last give-up reason, since
	// the Transport plans a wait before it counts attempts.
	var beyond Attempt
	for n := 2; n <= p.MaxAttempts+1; n++ {
		prev := pl.Attempts[len(pl.Attempts)-1]
		a := Attempt{N: n}
		lo, hi := bo.next()
		if tooLong {
			a.Fit, a.Stop = Never, retrybudget.ErrWaitTooLong
		} else {
			a.WaitMin, a.WaitMax = raise(p, lo, hi)
			a.Earliest = addSat(prev.Earliest, p.AttemptDuration, a.WaitMin)
			a.Latest = addSat(prev.Latest, p.AttemptDuration, a.WaitMax)
			a.Fit = fit(p.Deadline, a.Earliest, a.Latest)
			if a.Fit == Never {
				a.Stop = retrybudget.ErrDeadline
			}
		}
		if n > p.MaxAttempts {
			beyond = a
		} else {
			pl.Attempts = append(pl.Attempts, a)
		}
	}
	last := pl.Attempts[0]
	for _, a := range pl.Attempts {
		if a.Fit != Never {
			last, pl.Sendable = a, a.N
		}
	}
	pl.GiveUp = addSat(last.Latest, p.AttemptDuration)
	if p.Deadline > 0 {
		// An attempt is cut short at the deadline (attemptContext).
		pl.GiveUp = min(pl.GiveUp, p.Deadline)
	}
	// On the path of the longest waits, the call stops before the attempt
	// after the last sendable one: beyond MaxAttempts, or the first Never.
	after := beyond
	if last.N < p.MaxAttempts {
		after = pl.Attempts[last.N]
	}
	switch {
	case tooLong:
		pl.Reason = retrybudget.ErrWaitTooLong
	case p.Deadline > 0 && after.Latest >= p.Deadline:
		pl.Reason = retrybudget.ErrDeadline
	default:
		pl.Reason = retrybudget.ErrAttemptsExhausted
	}
	pl.Amplification = Amplification(p, pl.Sendable)
	return pl
}

// fit places an attempt starting between earliest and latest against the
// deadline. The Transport gives up when a wait would end at or past the
// deadline, so starting exactly at it does not fit.
func fit(deadline, earliest, latest time.Duration) Fit {
	switch {
	case deadline == 0 || latest < deadline:
		return Fits
	case earliest < deadline:
		return MayMiss
	}
	return Never
}

// raise applies a Retry-After to a backoff range [lo, hi], as the
// schedule's Wait does: a backoff no longer than the Retry-After is
// replaced by the Retry-After plus a spread in [0, Spread()], so the waits
// run from the Retry-After up to the larger of hi and the spread's top.
func raise(p Policy, lo, hi time.Duration) (time.Duration, time.Duration) {
	r := p.RetryAfter
	if r == 0 || r < lo {
		return lo, hi
	}
	return r, max(hi, addSat(r, p.schedule().Spread()))
}

// backoff walks the intervals of cenkalti/backoff/v4's ExponentialBackOff
// as the Transport configures it (InitialInterval BaseDelay, Multiplier 2,
// RandomizationFactor Jitter, MaxInterval MaxDelay), giving the range each
// randomized interval can take instead of a sample.
type backoff struct {
	cur    time.Duration
	max    time.Duration
	jitter float64
}

func newBackoff(p Policy) *backoff {
	return &backoff{cur: p.BaseDelay, max: p.MaxDelay, jitter: p.Jitter}
}

// next returns the range of the next delay, capped at MaxDelay as the Wait
// caps it, and moves to the next interval.
func (b *backoff) next() (lo, hi time.Duration) {
	lo, hi = b.cur, b.cur
	if b.jitter > 0 {
		// getRandomValueFromInterval: min + r×(max−min+1) with r in
		// [0, 1), truncated, so the top is max rounded up.
		delta := b.jitter * float64(b.cur)
		lo = time.Duration(float64(b.cur) - delta)
		hi = durationOf(math.Ceil(float64(b.cur) + delta))
	}
	// incrementCurrentInterval: an interval at or past half the cap jumps
	// to the cap, which also keeps it from overflowing.
	if float64(b.cur) >= float64(b.max)/2 {
		b.cur = b.max
	} else {
		b.cur *= 2
	}
	return min(lo, b.max), min(hi, b.max)
}

// durationOf converts f nanoseconds to a Duration, saturating.
func durationOf(f float64) time.Duration {
	if f >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(f)
}

// addSat adds non-negative durations, saturating at the largest Duration
// so that absurd inputs give absurd answers rather than negative ones.
func addSat(ds ...time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		if sum > math.MaxInt64-d {
			return math.MaxInt64
		}
		sum += d
	}
	return sum
}
