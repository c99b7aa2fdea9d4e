package retrybudget_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/budget"
	"github.com/retrybudget/retrybudget/internal/benchtest"
)

// The metastable overload (Bronson et al., HotOS'21; Huang et al., OSDI'22):
// a provider with a deep FIFO queue that still does the work of clients who
// gave up. A spike in service time fills the queue past the clients'
// patience; from then on every attempt times out, its work is done anyway,
// and retries keep the queue full after the spike is over. The scenario runs
// in virtual time (testing/synctest): the provider is an in-memory
// RoundTripper whose workers sleep through each request's service time
// (benchtest.QueueProvider).

var metastableFigures = flag.Bool("metastable.figures", false,
	"TestMetastableFigures: run the overload scenario at 60% and 75% load and log its figures")

// overloadScenario is one run: an open-loop Poisson stream of GETs at load ×
// the provider's capacity, a spike of service time, and the recovery.
type overloadScenario struct {
	load float64 // of the provider's normal capacity, workers/service
	// warm, spike and recovery are the phases; the service time is
	// spikeFactor × service during spike.
	warm, spike, recovery time.Duration
	spikeFactor           float64
	seed                  uint64
	// cfg is the Transport's Config; Base is set by run.
	cfg retrybudget.Config
}

// The provider of the scenario and its clients' deadlines.
const (
	overloadWorkers  = 8
	overloadService  = 20 * time.Millisecond
	overloadDepth    = 2000
	overloadDeadline = time.Second
)

// overloadConfig is the clients' policy: 4 attempts of at most 200 ms,
// backoff 10-100 ms; everything else the defaults.
func overloadConfig() retrybudget.Config {
	return retrybudget.Config{MaxAttempts: 4, BaseDelay: 10 * time.Millisecond, MaxDelay: 100 * time.Millisecond,
		AttemptTimeout: 200 * time.Millisecond}
}

// overloadCall is what one call's caller got.
type overloadCall struct {
	start    time.Duration // since the run began
	ok       bool
	attempts int
	reason   string
}

// overloadRun is a run's record.
type overloadRun struct {
	s        overloadScenario
	calls    []overloadCall
	arrivals int64
}

// run runs s in a synctest bubble of its own.
func (s overloadScenario) run(t *testing.T) *overloadRun {
	t.Helper()
	res := &overloadRun{s: s}
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		spikeAt, spikeEnd := t0.Add(s.warm), t0.Add(s.warm+s.spike)
		slow := time.Duration(float64(overloadService) * s.spikeFactor)
		p := benchtest.NewQueueProvider(overloadWorkers, overloadDepth, func(now time.Time) time.Duration {
			if !now.Before(spikeAt) && now.Before(spikeEnd) {
				return slow
			}
			return overloadService
		})
		cfg := s.cfg
		cfg.Base = p
		tr := retrybudget.New(cfg)
		rate := s.load * overloadWorkers / overloadService.Seconds()
		rng := rand.New(rand.NewPCG(s.seed, 1))
		end := t0.Add(s.warm + s.spike + s.recovery)
		var mu sync.Mutex
		var calls sync.WaitGroup
		for at := t0; at.Before(end); at = at.Add(time.Duration(rng.ExpFloat64() / rate * float64(time.Second))) {
			time.Sleep(time.Until(at))
			calls.Go(func() {
				c := overloadCall{start: time.Since(t0)}
				ctx, cancel := context.WithTimeout(context.Background(), overloadDeadline)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://provider.test/v1/items", nil)
				resp, err := tr.RoundTrip(req)
				if err == nil {
					resp.Body.Close()
				}
				c.ok = err == nil && resp.StatusCode == http.StatusOK
				out, _ := retrybudget.OutcomeOf(resp)
				if err != nil {
					out = err.(*retrybudget.Error).Outcome
				}
				c.attempts, c.reason = out.Attempts, retrybudget.ReasonCode(out.Reason)
				mu.Lock()
				res.calls = append(res.calls, c)
				mu.Unlock()
			})
		}
		calls.Wait()
		p.Close()
		res.arrivals = p.Arrivals()
	})
	return res
}

// goodput is the share of the calls started in [from, to) that succeeded.
func (r *overloadRun) goodput(from, to time.Duration) float64 {
	var n, ok int
	for _, c := range r.calls {
		if c.start >= from && c.start < to {
			n++
			if c.ok {
				ok++
			}
		}
	}
	if n == 0 {
		return 0
	}
	return float64(ok) / float64(n)
}

// lastGoodput is the goodput of the calls started in the recovery's last 4 s.
func (r *overloadRun) lastGoodput() float64 {
	end := r.s.warm + r.s.spike + r.s.recovery
	return r.goodput(end-4*time.Second, end)
}

// arrivalsPerCall is the provider's arrivals per call.
func (r *overloadRun) arrivalsPerCall() float64 { return float64(r.arrivals) / float64(len(r.calls)) }

// refusals counts the calls started in [from, to) that ended without an
// attempt.
func (r *overloadRun) refusals(from, to time.Duration) int {
	n := 0
	for _, c := range r.calls {
		if c.start >= from && c.start < to && c.attempts == 0 {
			n++
		}
	}
	return n
}

// timeline is the goodput of each second, and the reasons calls ended with.
func (r *overloadRun) timeline() string {
	var b strings.Builder
	end := r.s.warm + r.s.spike + r.s.recovery
	for from := time.Duration(0); from < end; from += time.Second {
		fmt.Fprintf(&b, " %3.0f", 100*r.goodput(from, from+time.Second))
	}
	reasons := map[string]int{}
	for _, c := range r.calls {
		if !c.ok {
			reasons[c.reason]++
		}
	}
	fmt.Fprintf(&b, " | failures: %v", reasons)
	return b.String()
}

func metastableScenario(load float64, seed uint64) overloadScenario {
	return overloadScenario{load: load, warm: 2 * time.Second, spike: 2 * time.Second, recovery: 8 * time.Second,
		spikeFactor: 3, seed: seed, cfg: overloadConfig()}
}

// steadyScenario is the same load for 12 s with no spike.
func steadyScenario(load float64, seed uint64) overloadScenario {
	return overloadScenario{load: load, warm: 12 * time.Second, spikeFactor: 1, seed: seed, cfg: overloadConfig()}
}

// overloadOff is the Config without the Overload's defence.
func overloadOff(cfg retrybudget.Config) retrybudget.Config {
	cfg.Overload = budget.NewOverload(budget.OverloadConfig{Disable: true})
	return cfg
}

// At 75% load the defaults recover within the 8 s, where without the
// Overload the backlog outlives the spike: the calls of the last 4 s time
// out behind the work of callers who left.
func TestMetastableOverloadRecoversAt75Percent(t *testing.T) {
	s := metastableScenario(0.75, 1)
	r := s.run(t)
	if g, a := r.lastGoodput(), r.arrivalsPerCall(); g < 0.9 || a > 1.2 {
		t.Errorf("defaults: goodput %.1f%% in the last 4 s, %.2f arrivals per call; want at least 90%% and at most 1.2\n%s",
			100*g, a, r.timeline())
	}
	s.cfg = overloadOff(s.cfg)
	if r := s.run(t); r.lastGoodput() >= 0.9 {
		t.Errorf("without the Overload: goodput %.1f%% in the last 4 s; want the metastable state (below 90%%)\n%s",
			100*r.lastGoodput(), r.timeline())
	}
}

// At 60% load the retry budget alone recovers; the Overload keeps that.
func TestMetastableOverloadRecoversAt60Percent(t *testing.T) {
	r := metastableScenario(0.6, 1).run(t)
	if g, a := r.lastGoodput(), r.arrivalsPerCall(); g < 1 || a > 1.05 {
		t.Errorf("goodput %.1f%% in the last 4 s, %.2f arrivals per call; want 100%% and at most 1.05\n%s",
			100*g, a, r.timeline())
	}
}

// While the provider keeps up, nothing is refused: at 75% load with no
// spike, every call is sent and answered.
func TestOverloadRefusesNothingInSteadyState(t *testing.T) {
	r := steadyScenario(0.75, 1).run(t)
	if n, g := r.refusals(0, r.s.warm), r.goodput(0, r.s.warm); n != 0 || g != 1 {
		t.Errorf("%d calls refused, goodput %.1f%%; want none refused and every call answered\n%s", n, 100*g, r.timeline())
	}
	if int64(len(r.calls)) != r.arrivals {
		t.Errorf("%d arrivals for %d calls; want one each", r.arrivals, len(r.calls))
	}
}

// TestMetastableFigures logs the scenario's figures for docs/benchmarks.md:
// go test -run TestMetastableFigures -metastable.figures -v .
func TestMetastableFigures(t *testing.T) {
	if !*metastableFigures {
		t.Skip("figures only: -metastable.figures")
	}
	throttle := func(cfg retrybudget.Config) retrybudget.Config {
		cfg = overloadOff(cfg)
		cfg.Throttle = budget.NewThrottle(budget.ThrottleConfig{})
		return cfg
	}
	var b strings.Builder
	b.WriteString("| load | client | goodput, last 4 s | arrivals per call | refused, last 4 s | refused in steady state | goodput per second, seed 1 |\n|---|---|---|---|---|---|---|\n")
	for _, load := range []float64{0.6, 0.75, 0.9} {
		for _, c := range []struct {
			name string
			cfg  func(retrybudget.Config) retrybudget.Config
		}{
			{"Overload off (the retry budget alone)", overloadOff},
			{"defaults", func(c retrybudget.Config) retrybudget.Config { return c }},
			{"Throttle, Overload off", throttle},
		} {
			const seeds = 3
			var good, arrivals, late []string
			refused := 0
			var timeline string
			for seed := uint64(1); seed <= seeds; seed++ {
				s, steady := metastableScenario(load, seed), steadyScenario(load, seed)
				s.cfg, steady.cfg = c.cfg(s.cfg), c.cfg(steady.cfg)
				r, st := s.run(t), steady.run(t)
				good = append(good, fmt.Sprintf("%.1f%%", 100*r.lastGoodput()))
				arrivals = append(arrivals, fmt.Sprintf("%.2f", r.arrivalsPerCall()))
				end := s.warm + s.spike + s.recovery
				late = append(late, fmt.Sprint(r.refusals(end-4*time.Second, end)))
				refused += st.refusals(0, st.s.warm)
				if seed == 1 {
					timeline = r.timeline()
				}
			}
			fmt.Fprintf(&b, "| %.0f%% | %s | %s | %s | %s | %d | %s |\n", 100*load, c.name,
				strings.Join(good, " / "), strings.Join(arrivals, " / "), strings.Join(late, " / "), refused, timeline)
		}
	}
	t.Logf("seeds 1 / 2 / 3\n\n%s", b.String())
}
