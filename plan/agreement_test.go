package plan_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/budget"
	"github.com/retrybudget/retrybudget/plan"
)

// The tests in this file hold the planner to the code it models: the
// backoff library, budget.Local and a real Transport.

// TestWaitRangesHoldTheLibrarysDelays draws delays from the
// ExponentialBackOff the Transport builds (wait.go) and checks that every
// one, capped at MaxDelay as planWait caps it, falls in the planned range,
// and that the draws reach both ends of it, so the range is not merely
// wide.
func TestWaitRangesHoldTheLibrarysDelays(t *testing.T) {
	policies := []plan.Policy{
		{},
		{MaxAttempts: 8, BaseDelay: 500 * ms, MaxDelay: 5 * s},
		{MaxAttempts: 6, BaseDelay: 4 * s, MaxDelay: 3 * s, Jitter: 1},
		{MaxAttempts: 6, BaseDelay: 333 * ms, MaxDelay: 7 * s, Jitter: 0.37},
		{MaxAttempts: 5, BaseDelay: 7, MaxDelay: 100, Jitter: 0.5},
		{MaxAttempts: 5, BaseDelay: s, Jitter: -1},
	}
	const draws = 20000
	for _, p := range policies {
		name := fmt.Sprintf("attempts=%d base=%v max=%v jitter=%v", p.MaxAttempts, p.BaseDelay, p.MaxDelay, p.Jitter)
		t.Run(name, func(t *testing.T) {
			pl := plan.Compute(p)
			q := pl.Policy
			lows := make([]time.Duration, q.MaxAttempts)
			highs := make([]time.Duration, q.MaxAttempts)
			for range draws {
				b := &backoff.ExponentialBackOff{InitialInterval: q.BaseDelay, RandomizationFactor: q.Jitter,
					Multiplier: 2, MaxInterval: q.MaxDelay, Stop: backoff.Stop, Clock: backoff.SystemClock}
				b.Reset()
				for _, a := range pl.Attempts[1:] {
					d := min(b.NextBackOff(), q.MaxDelay)
					if d < a.WaitMin || d > a.WaitMax {
						t.Fatalf("attempt %d: drew %v outside [%v, %v]", a.N, d, a.WaitMin, a.WaitMax)
					}
					if lows[a.N-1] == 0 || d < lows[a.N-1] {
						lows[a.N-1] = d
					}
					highs[a.N-1] = max(highs[a.N-1], d)
				}
			}
			for _, a := range pl.Attempts[1:] {
				slack := time.Duration(math.Ceil(float64(a.WaitMax-a.WaitMin) * 0.01))
				if lows[a.N-1]-a.WaitMin > slack || a.WaitMax-highs[a.N-1] > slack {
					t.Errorf("attempt %d: draws span [%v, %v], planned [%v, %v]",
						a.N, lows[a.N-1], highs[a.N-1], a.WaitMin, a.WaitMax)
				}
			}
		})
	}
}

// TestAmplificationMatchesLocalBudget runs a total outage through a real
// budget.Local, fed by a fake clock: first attempts arrive at a steady rate
// and every call retries until its attempts run out or the budget refuses
// one (which ends the call, as in the Transport). The attempts per call it
// measures must match Amplification.
func TestAmplificationMatchesLocalBudget(t *testing.T) {
	tests := []struct {
		budget      budget.Config
		rate        float64
		maxAttempts int
	}{
		{budget.Config{}, 100, 4},  // 1.1: the percent rule
		{budget.Config{}, 1000, 4}, // 1.1
		{budget.Config{}, 50, 4},   // 1.2: the floor, 10/s of 50/s
		{budget.Config{}, 4, 4},    // 3.5: the floor passes the percent rule
		{budget.Config{}, 2, 4},    // 4: the floor covers every retry
		{budget.Config{Percent: 0.2, MinRetriesPerSec: 5}, 100, 4},
		{budget.Config{Percent: -1}, 100, 4},
		{budget.Config{MinRetriesPerSec: -1, Window: 2 * s}, 100, 3},
		{budget.Config{Percent: 1, MinRetriesPerSec: -1}, 100, 3}, // 2: one retry per call, all the percent rule allows
	}
	for _, tc := range tests {
		name := fmt.Sprintf("percent=%v floor=%v window=%v rate=%v attempts=%d",
			tc.budget.Percent, tc.budget.MinRetriesPerSec, tc.budget.Window, tc.rate, tc.maxAttempts)
		t.Run(name, func(t *testing.T) {
			p := plan.Policy{MaxAttempts: tc.maxAttempts, Budget: tc.budget, FirstAttemptsPerSec: tc.rate}
			want := plan.Amplification(p, tc.maxAttempts)
			got := simulateOutage(tc.budget, tc.rate, tc.maxAttempts)
			if math.Abs(got-want) > 0.01*want {
				t.Errorf("budget.Local gave %.4f attempts per call, Amplification %.4f", got, want)
			}
		})
	}
}

// simulateOutage returns the attempts per call a budget.Local allows in the
// steady state of a total outage. Time moves in 1ms steps; retries follow
// 200ms, 400ms, 800ms... after the attempt before them.
func simulateOutage(cfg budget.Config, rate float64, maxAttempts int) float64 {
	const (
		step    = time.Millisecond
		total   = 90 * time.Second
		measure = 40 * time.Second // from here on the window is full
	)
	t0 := time.Unix(1_000_000, 0)
	var at time.Time // the simulated time the budget reads
	b := budget.NewLocalClock(cfg, func() time.Time { return at })
	ctx := context.Background()
	due := map[time.Duration][]int{} // step → retry numbers due (2 = the first retry)
	var calls, attempts, arrived float64
	for now := time.Duration(0); now < total; now += step {
		at = t0.Add(now)
		counted := now >= measure
		// First attempts: one each time the arrival count passes a whole
		// number, so rate need not divide 1000.
		arrived += rate * step.Seconds()
		for ; arrived >= 1; arrived-- {
			b.Deposit(ctx, "d")
			if counted {
				calls++
				attempts++
			}
			if maxAttempts > 1 {
				due[now+200*ms] = append(due[now+200*ms], 2)
			}
		}
		for _, n := range due[now] {
			if !b.Withdraw(ctx, "d").Allowed {
				continue // ErrBudgetExhausted ends the call
			}
			if counted {
				attempts++
			}
			if n < maxAttempts {
				next := now + 200*ms<<(n-1)
				due[next] = append(due[next], n+1)
			}
		}
		delete(due, now)
	}
	return attempts / calls
}

// TestPlanMatchesTransport sends calls through a real Transport to a
// provider that always fails, in virtual time (testing/synctest), and
// checks the attempts and the give-up reason against the Plan. The
// policies keep every attempt away from the deadline's edge (no MayMiss).
func TestPlanMatchesTransport(t *testing.T) {
	tests := []struct {
		name       string
		cfg        retrybudget.Config
		retryAfter string
	}{
		{
			name: "attempts run out",
			cfg:  retrybudget.Config{MaxAttempts: 3, BaseDelay: 5 * ms, Jitter: -1},
		},
		{
			name: "the deadline stops the fourth attempt",
			// starts at 0, 20ms, 60ms; the fourth would start at 140ms
			cfg: retrybudget.Config{MaxAttempts: 6, BaseDelay: 20 * ms, Jitter: -1, Deadline: 100 * ms},
		},
		{
			name: "the deadline stops the wait after the last attempt",
			cfg:  retrybudget.Config{MaxAttempts: 2, BaseDelay: 20 * ms, Jitter: -1, Deadline: 50 * ms},
		},
		{
			name:       "Retry-After beyond MaxWait stops after the first attempt",
			cfg:        retrybudget.Config{MaxAttempts: 4, MaxWait: 500 * ms},
			retryAfter: "1",
		},
		{
			name:       "Retry-After raises the wait past MaxDelay and into the deadline",
			cfg:        retrybudget.Config{MaxAttempts: 4, BaseDelay: 10 * ms, MaxDelay: 20 * ms, Deadline: 1500 * ms},
			retryAfter: "1",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The provider answers at once, in the bubble's virtual time:
			// the attempts' times are the policy's, whatever the machine's
			// load.
			cfg := tc.cfg
			cfg.Base = roundTripFunc(func(r *http.Request) (*http.Response, error) {
				h := http.Header{}
				if tc.retryAfter != "" {
					h.Set("Retry-After", tc.retryAfter)
				}
				return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: h, Body: http.NoBody, Request: r}, nil
			})

			p := plan.FromConfig(tc.cfg)
			p.AttemptDuration = -1 // a loopback 503 takes next to no time
			if tc.retryAfter != "" {
				p.RetryAfter = s
			}
			pl := plan.Compute(p)
			for _, a := range pl.Attempts {
				if a.Fit == plan.MayMiss {
					t.Fatalf("attempt %d may or may not fit: the test needs a policy with margins", a.N)
				}
			}

			var out retrybudget.Outcome
			synctest.Test(t, func(t *testing.T) {
				req, _ := http.NewRequest(http.MethodGet, "http://provider.test/", nil)
				resp, err := retrybudget.New(cfg).RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				out, _ = retrybudget.OutcomeOf(resp)
			})
			if out.Attempts != pl.Sendable || !errors.Is(out.Reason, pl.Reason) {
				t.Errorf("Transport: %d attempts, %v; plan: %d, %v", out.Attempts, out.Reason, pl.Sendable, pl.Reason)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
