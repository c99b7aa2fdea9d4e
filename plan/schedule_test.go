package plan_test

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/plan"
)

const (
	ms = time.Millisecond
	s  = time.Second
)

// row builds an expected Attempt.
func row(n int, waitMin, waitMax, earliest, latest time.Duration, fit plan.Fit) plan.Attempt {
	a := plan.Attempt{N: n, WaitMin: waitMin, WaitMax: waitMax, Earliest: earliest, Latest: latest, Fit: fit}
	if fit == plan.Never {
		a.Stop = retrybudget.ErrDeadline
	}
	return a
}

func TestCompute(t *testing.T) {
	tests := []struct {
		name     string
		policy   plan.Policy
		attempts []plan.Attempt
		giveUp   time.Duration
		reason   error
	}{
		{
			name:   "defaults: 200ms doubling, half jitter, 1s attempts",
			policy: plan.Policy{},
			attempts: []plan.Attempt{
				row(1, 0, 0, 0, 0, plan.Fits),
				row(2, 100*ms, 300*ms, 1100*ms, 1300*ms, plan.Fits),
				row(3, 200*ms, 600*ms, 2300*ms, 2900*ms, plan.Fits),
				row(4, 400*ms, 1200*ms, 3700*ms, 5100*ms, plan.Fits),
			},
			giveUp: 6100 * ms,
			reason: retrybudget.ErrAttemptsExhausted,
		},
		{
			name:   "MaxDelay caps the interval and the jitter above it",
			policy: plan.Policy{MaxAttempts: 5, BaseDelay: s, MaxDelay: 3 * s, AttemptDuration: -1},
			attempts: []plan.Attempt{
				row(1, 0, 0, 0, 0, plan.Fits),
				row(2, 500*ms, 1500*ms, 500*ms, 1500*ms, plan.Fits),
				row(3, s, 3*s, 1500*ms, 4500*ms, plan.Fits),   // 2s ± 1s
				row(4, 1500*ms, 3*s, 3*s, 7500*ms, plan.Fits), // 2s ≥ 3s/2 jumps to 3s; 4.5s capped
				row(5, 1500*ms, 3*s, 4500*ms, 10500*ms, plan.Fits),
			},
			giveUp: 10500 * ms,
			reason: retrybudget.ErrAttemptsExhausted,
		},
		{
			name:   "BaseDelay above MaxDelay: the first interval is BaseDelay, its jitter capped",
			policy: plan.Policy{MaxAttempts: 3, BaseDelay: 4 * s, MaxDelay: 3 * s, AttemptDuration: -1},
			attempts: []plan.Attempt{
				row(1, 0, 0, 0, 0, plan.Fits),
				row(2, 2*s, 3*s, 2*s, 3*s, plan.Fits),
				row(3, 1500*ms, 3*s, 3500*ms, 6*s, plan.Fits),
			},
			giveUp: 6 * s,
			reason: retrybudget.ErrAttemptsExhausted,
		},
		{
			name:   "deadline: yes, maybe, never",
			policy: plan.Policy{MaxAttempts: 5, Deadline: 5 * s},
			attempts: []plan.Attempt{
				row(1, 0, 0, 0, 0, plan.Fits),
				row(2, 100*ms, 300*ms, 1100*ms, 1300*ms, plan.Fits),
				row(3, 200*ms, 600*ms, 2300*ms, 2900*ms, plan.Fits),
				row(4, 400*ms, 1200*ms, 3700*ms, 5100*ms, plan.MayMiss),
				row(5, 800*ms, 2400*ms, 5500*ms, 8500*ms, plan.Never),
			},
			giveUp: 5 * s, // attempt 4 may start just before the deadline and be cut at it
			reason: retrybudget.ErrDeadline,
		},
		{
			name:   "starting exactly at the deadline does not fit",
			policy: plan.Policy{MaxAttempts: 3, BaseDelay: s, Jitter: -1, AttemptDuration: -1, Deadline: 3 * s},
			attempts: []plan.Attempt{
				row(1, 0, 0, 0, 0, plan.Fits),
				row(2, s, s, s, s, plan.Fits),
				row(3, 2*s, 2*s, 3*s, 3*s, plan.Never),
			},
			giveUp: s,
			reason: retrybudget.ErrDeadline,
		},
		{
			name:   "the last attempt fits but the wait after it would not: ErrDeadline",
			policy: plan.Policy{MaxAttempts: 2, BaseDelay: s, Jitter: -1, AttemptDuration: -1, Deadline: 2 * s},
			attempts: []plan.Attempt{
				row(1, 0, 0, 0, 0, plan.Fits),
				row(2, s, s, s, s, plan.Fits),
			},
			giveUp: s,
			reason: retrybudget.ErrDeadline, // planWait runs before the attempt count
		},
		{
			name:   "the last attempt fits with room for the wait after it: ErrAttemptsExhausted",
			policy: plan.Policy{MaxAttempts: 2, BaseDelay: s, Jitter: -1, AttemptDuration: -1, Deadline: 3*s + 1},
			attempts: []plan.Attempt{
				row(1, 0, 0, 0, 0, plan.Fits),
				row(2, s, s, s, s, plan.Fits),
			},
			giveUp: s,
			reason: retrybudget.ErrAttemptsExhausted,
		},
		{
			name:   "an attempt running past the deadline is cut at it",
			policy: plan.Policy{MaxAttempts: 2, BaseDelay: s, Jitter: -1, AttemptDuration: 10 * s, Deadline: 15 * s},
			attempts: []plan.Attempt{
				row(1, 0, 0, 0, 0, plan.Fits),
				row(2, s, s, 11*s, 11*s, plan.Fits),
			},
			giveUp: 15 * s,
			reason: retrybudget.ErrDeadline,
		},
		{
			name:   "Retry-After shorter than every backoff changes nothing",
			policy: plan.Policy{MaxAttempts: 2, BaseDelay: s, AttemptDuration: -1, RetryAfter: 400 * ms},
			attempts: []plan.Attempt{
				row(1, 0, 0, 0, 0, plan.Fits),
				row(2, 500*ms, 1500*ms, 500*ms, 1500*ms, plan.Fits),
			},
			giveUp: 1500 * ms,
			reason: retrybudget.ErrAttemptsExhausted,
		},
		{
			name:   "Retry-After inside the backoff range raises its bottom",
			policy: plan.Policy{MaxAttempts: 2, BaseDelay: s, AttemptDuration: -1, RetryAfter: 1200 * ms},
			attempts: []plan.Attempt{
				row(1, 0, 0, 0, 0, plan.Fits),
				// backoffs up to 1.2s become 1.2s + [0, 500ms]; longer ones stay
				row(2, 1200*ms, 1700*ms, 1200*ms, 1700*ms, plan.Fits),
			},
			giveUp: 1700 * ms,
			reason: retrybudget.ErrAttemptsExhausted,
		},
		{
			name:   "Retry-After above the backoff: Retry-After plus up to Jitter×BaseDelay, past MaxDelay",
			policy: plan.Policy{MaxAttempts: 3, BaseDelay: s, MaxDelay: 2 * s, AttemptDuration: -1, RetryAfter: 5 * s},
			attempts: []plan.Attempt{
				row(1, 0, 0, 0, 0, plan.Fits),
				row(2, 5*s, 5500*ms, 5*s, 5500*ms, plan.Fits),
				row(3, 5*s, 5500*ms, 10*s, 11*s, plan.Fits),
			},
			giveUp: 11 * s,
			reason: retrybudget.ErrAttemptsExhausted,
		},
		{
			name:   "Retry-After equal to MaxWait is obeyed",
			policy: plan.Policy{MaxAttempts: 2, Jitter: -1, AttemptDuration: -1, RetryAfter: 60 * s},
			attempts: []plan.Attempt{
				row(1, 0, 0, 0, 0, plan.Fits),
				row(2, 60*s, 60*s, 60*s, 60*s, plan.Fits),
			},
			giveUp: 60 * s,
			reason: retrybudget.ErrAttemptsExhausted,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl := plan.Compute(tc.policy)
			if !reflect.DeepEqual(pl.Attempts, tc.attempts) {
				t.Errorf("attempts:\n got %+v\nwant %+v", pl.Attempts, tc.attempts)
			}
			if pl.GiveUp != tc.giveUp {
				t.Errorf("GiveUp = %v, want %v", pl.GiveUp, tc.giveUp)
			}
			if pl.Reason != tc.reason {
				t.Errorf("Reason = %v, want %v", pl.Reason, tc.reason)
			}
		})
	}
}

func TestRetryAfterBeyondMaxWaitStopsAfterTheFirstAttempt(t *testing.T) {
	for _, maxAttempts := range []int{-1, 1, 4} {
		pl := plan.Compute(plan.Policy{MaxAttempts: maxAttempts, RetryAfter: 61 * s, Deadline: 10 * s})
		if pl.Sendable != 1 || pl.Reason != retrybudget.ErrWaitTooLong || pl.GiveUp != s {
			t.Errorf("MaxAttempts %d: Sendable %d, Reason %v, GiveUp %v; want 1, ErrWaitTooLong, 1s",
				maxAttempts, pl.Sendable, pl.Reason, pl.GiveUp)
		}
		for _, a := range pl.Attempts[1:] {
			if a.Fit != plan.Never || !errors.Is(a.Stop, retrybudget.ErrWaitTooLong) {
				t.Errorf("attempt %d: %v %v, want never ErrWaitTooLong", a.N, a.Fit, a.Stop)
			}
		}
		if pl.Amplification != 1 {
			t.Errorf("Amplification %v, want 1", pl.Amplification)
		}
	}
}

// TestComputeInvariants checks, over random policies, what every Plan must
// hold whatever the inputs.
func TestComputeInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	dur := func(limit time.Duration) time.Duration { return time.Duration(r.Int64N(int64(limit))) - limit/10 }
	for i := range 5000 {
		p := plan.Policy{
			MaxAttempts:     r.IntN(12) - 1,
			BaseDelay:       dur(3 * s),
			MaxDelay:        dur(20 * s),
			Jitter:          r.Float64()*1.4 - 0.2,
			MaxWait:         dur(30 * s),
			Deadline:        dur(40 * s),
			AttemptDuration: dur(5 * s),
			RetryAfter:      max(dur(40*s), 0),
		}
		pl := plan.Compute(p)
		q := pl.Policy
		if len(pl.Attempts) != q.MaxAttempts || pl.Sendable < 1 || pl.Sendable > q.MaxAttempts {
			t.Fatalf("%d %+v: %d attempts, %d sendable", i, q, len(pl.Attempts), pl.Sendable)
		}
		if q.Deadline > 0 && pl.GiveUp > q.Deadline {
			t.Fatalf("%d %+v: gives up at %v, past the deadline", i, q, pl.GiveUp)
		}
		if pl.Amplification < 1 || pl.Amplification > float64(pl.Sendable) {
			t.Fatalf("%d %+v: amplification %v outside [1, %d]", i, q, pl.Amplification, pl.Sendable)
		}
		for j, a := range pl.Attempts {
			if a.N != j+1 || a.WaitMin > a.WaitMax || a.Earliest > a.Latest {
				t.Fatalf("%d %+v: attempt %+v", i, q, a)
			}
			if (a.Fit == plan.Never) != (a.Stop != nil) || (a.Fit == plan.Never) != (a.N > pl.Sendable) {
				t.Fatalf("%d %+v: attempt %+v with %d sendable", i, q, a, pl.Sendable)
			}
			if j == 0 {
				continue
			}
			b := pl.Attempts[j-1]
			if a.Stop == nil && (a.Earliest < b.Earliest+a.WaitMin || a.Fit < b.Fit) {
				t.Fatalf("%d %+v: attempt %+v after %+v", i, q, a, b)
			}
			if a.Stop == nil && q.RetryAfter == 0 && a.WaitMax > q.MaxDelay {
				t.Fatalf("%d %+v: wait %v past MaxDelay", i, q, a.WaitMax)
			}
		}
	}
}
