package peers

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/failsafe-go/failsafe-go/timeout"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/budget"
	"github.com/retrybudget/retrybudget/internal/benchtest"
)

// The metastable overload, in virtual time (testing/synctest), for every
// contender: a provider of 8 workers × 20 ms (400 requests/s) with a FIFO
// queue of 2,000 that still does the work of clients that left; an
// open-loop Poisson stream of GETs with 1 s deadlines and 200 ms attempts
// (4 attempts, backoff 10-100 ms); 2 s of normal service, 2 s at three
// times the service time, 8 s of normal service. The root package holds
// the same scenario for the SDK alone, asserted (metastable_test.go).

// The scenario's provider and policy.
const (
	msWorkers   = 8
	msService   = 20 * time.Millisecond
	msDepth     = 2000
	msDeadline  = time.Second
	msAttempt   = 200 * time.Millisecond
	msBaseDelay = 10 * time.Millisecond
	msMaxDelay  = 100 * time.Millisecond
)

// msRun is one run's record: per call, when it started and whether it
// succeeded.
type msRun struct {
	starts   []time.Duration
	ok       []bool
	arrivals int64
}

// runMetastable runs the scenario at load through the RoundTripper that mk
// builds on the provider, spiking for spike (zero: steady state) after 2 s,
// for 12 s in all.
func runMetastable(t *testing.T, mk func(base http.RoundTripper) http.RoundTripper, load float64, spike time.Duration, seed uint64) *msRun {
	res := &msRun{}
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		spikeAt, spikeEnd := t0.Add(2*time.Second), t0.Add(2*time.Second+spike)
		p := benchtest.NewQueueProvider(msWorkers, msDepth, func(now time.Time) time.Duration {
			if !now.Before(spikeAt) && now.Before(spikeEnd) {
				return 3 * msService
			}
			return msService
		})
		rt := mk(p)
		rate := load * msWorkers / msService.Seconds()
		rng := rand.New(rand.NewPCG(seed, 1))
		var mu sync.Mutex
		var calls sync.WaitGroup
		for at := t0; at.Before(t0.Add(12 * time.Second)); at = at.Add(time.Duration(rng.ExpFloat64() / rate * float64(time.Second))) {
			time.Sleep(time.Until(at))
			calls.Go(func() {
				start := time.Since(t0)
				ctx, cancel := context.WithTimeout(context.Background(), msDeadline)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://provider.test/v1/items", nil)
				resp, err := rt.RoundTrip(req)
				ok := err == nil && resp.StatusCode == http.StatusOK
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				mu.Lock()
				res.starts, res.ok = append(res.starts, start), append(res.ok, ok)
				mu.Unlock()
			})
		}
		calls.Wait()
		p.Close()
		res.arrivals = p.Arrivals()
	})
	return res
}

// goodput is the share of the calls started in [from, to) that succeeded,
// and how many failed.
func (r *msRun) goodput(from, to time.Duration) (float64, int) {
	n, ok := 0, 0
	for i, s := range r.starts {
		if s >= from && s < to {
			n++
			if r.ok[i] {
				ok++
			}
		}
	}
	if n == 0 {
		return 0, 0
	}
	return float64(ok) / float64(n), n - ok
}

func (r *msRun) perSecond() string {
	var b strings.Builder
	for s := range 12 {
		g, _ := r.goodput(time.Duration(s)*time.Second, time.Duration(s+1)*time.Second)
		fmt.Fprintf(&b, " %.0f", 100*g)
	}
	return strings.TrimSpace(b.String())
}

// msContenders are the clients of the scenario, each with the scenario's
// policy as far as its options allow.
func msContenders() []struct {
	name string
	mk   func(base http.RoundTripper) http.RoundTripper
} {
	rb := func(cfg retrybudget.Config) func(http.RoundTripper) http.RoundTripper {
		return func(base http.RoundTripper) http.RoundTripper {
			cfg.Base, cfg.MaxAttempts, cfg.BaseDelay, cfg.MaxDelay, cfg.AttemptTimeout = base, maxAttempts, msBaseDelay, msMaxDelay, msAttempt
			return retrybudget.New(cfg)
		}
	}
	off := func() *budget.Overload { return budget.NewOverload(budget.OverloadConfig{Disable: true}) }
	fsRetry := func() retrypolicy.Builder[*http.Response] {
		return failsafehttp.NewRetryPolicyBuilder().WithMaxRetries(maxAttempts-1).WithBackoff(msBaseDelay, msMaxDelay)
	}
	return []struct {
		name string
		mk   func(base http.RoundTripper) http.RoundTripper
	}{
		{"retrybudget (defaults)", rb(retrybudget.Config{})},
		{"retrybudget, Overload off (the retry budget alone)", func(base http.RoundTripper) http.RoundTripper {
			return rb(retrybudget.Config{Overload: off()})(base)
		}},
		{"retrybudget, Overload off, Throttle on", func(base http.RoundTripper) http.RoundTripper {
			return rb(retrybudget.Config{Overload: off(), Throttle: budget.NewThrottle(budget.ThrottleConfig{})})(base)
		}},
		{"go-retryablehttp", func(base http.RoundTripper) http.RoundTripper {
			c := retryablehttp.NewClient()
			c.HTTPClient = &http.Client{Transport: base, Timeout: msAttempt}
			c.RetryMax = maxAttempts - 1
			c.RetryWaitMin, c.RetryWaitMax = msBaseDelay, msMaxDelay
			c.Logger = nil
			return &retryablehttp.RoundTripper{Client: c}
		}},
		{"failsafehttp", func(base http.RoundTripper) http.RoundTripper {
			return failsafehttp.NewRoundTripper(base, fsRetry().Build(), timeout.New[*http.Response](msAttempt))
		}},
		{"failsafehttp + adaptive limiter", func(base http.RoundTripper) http.RoundTripper {
			return failsafehttp.NewRoundTripper(base, fsRetry().Build(), adaptivelimiter.NewWithDefaults[*http.Response](),
				timeout.New[*http.Response](msAttempt))
		}},
	}
}

// TestMetastable logs one table of the scenario at 60, 75 and 90 % load
// for every contender (run with -v). The figures are findings, not
// assertions; the root package asserts the SDK's.
func TestMetastable(t *testing.T) {
	var b strings.Builder
	b.WriteString("| load | library | goodput, last 4 s | arrivals per call | failed in 12 s with no spike | goodput per second, seed 1 |\n|---|---|---|---|---|---|\n")
	for _, load := range []float64{0.6, 0.75, 0.9} {
		for _, c := range msContenders() {
			var good, arrivals []string
			failed := 0
			var seconds string
			for seed := uint64(1); seed <= 3; seed++ {
				r := runMetastable(t, c.mk, load, 2*time.Second, seed)
				g, _ := r.goodput(8*time.Second, 12*time.Second)
				good = append(good, fmt.Sprintf("%.1f", 100*g))
				arrivals = append(arrivals, fmt.Sprintf("%.2f", float64(r.arrivals)/float64(len(r.starts))))
				_, f := runMetastable(t, c.mk, load, 0, seed).goodput(0, 12*time.Second)
				failed += f
				if seed == 1 {
					seconds = r.perSecond()
				}
			}
			fmt.Fprintf(&b, "| %.0f %% | %s | %s %% | %s | %d | %s |\n", 100*load, c.name,
				strings.Join(good, " / "), strings.Join(arrivals, " / "), failed, seconds)
		}
	}
	t.Logf("metastable overload, seeds 1 / 2 / 3\n\n%s", b.String())
}
