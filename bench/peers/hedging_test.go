package peers

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/hedgepolicy"

	"github.com/retrybudget/retrybudget"
)

// The provider of the hedging scenarios: most requests take its median,
// the slowest tailShare of them tailSlowdown times as long.
const (
	// defaultTailMedian is the provider's median unless PEERS_TAIL_MEDIAN
	// (a duration) says otherwise.
	defaultTailMedian = 20 * time.Millisecond
	tailShare         = 0.05
	tailSlowdown      = 20
)

// tailMedian returns the slow-tail provider's median: defaultTailMedian,
// or PEERS_TAIL_MEDIAN, so that the fixed costs of a hedge (a timer, a
// goroutine, a connection) can be seen apart from the median they sit on.
func tailMedian() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("PEERS_TAIL_MEDIAN")); err == nil && d > 0 {
		return d
	}
	return defaultTailMedian
}

// hedgeDelay is the fixed delay of the contenders that take one, for a
// provider of the given median: a quarter above it, as an operator who
// knows the provider would set it.
func hedgeDelay(median time.Duration) time.Duration { return median * 5 / 4 }

// tailProvider answers 200 after median, or after tailSlowdown times it for a
// share tailShare of arrivals, drawn from a seeded source; it stops
// working on a request whose client went away. While down, it answers
// every request 503 after outageLatency instead (overloaded: slow and
// failing).
type tailProvider struct {
	median time.Duration
	down   atomic.Bool

	mu  sync.Mutex // guards rnd
	rnd *rand.Rand
}

// outageLatency is how long the provider takes to answer 503 while down.
const outageLatency = 200 * time.Millisecond

func newTailProvider(median time.Duration) *tailProvider {
	return &tailProvider{median: median, rnd: rand.New(rand.NewPCG(1, 2))}
}

func (p *tailProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	down := p.down.Load()
	p.mu.Lock()
	slow := p.rnd.Float64() < tailShare
	p.mu.Unlock()
	d := p.median
	switch {
	case down:
		d = outageLatency
	case slow:
		d = tailSlowdown * p.median
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
		return
	}
	if down {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	fmt.Fprint(w, okBody)
}

func rbHedgePercentile(p float64) contender {
	return contender{
		name: fmt.Sprintf("retrybudget, hedge p%v", p),
		config: fmt.Sprintf("as retrybudget with `HedgePercentile: %v`: one hedge after the %vth percentile of the destination's latencies "+
			"(once it has 32), spending the default retry budget", p, p),
		rt: func(base http.RoundTripper) http.RoundTripper {
			cfg := rbConfig(base)
			cfg.HedgePercentile = p
			return retrybudget.New(cfg)
		},
	}
}

func rbHedgeFixed(delay time.Duration) contender {
	return contender{
		name:   fmt.Sprintf("retrybudget, hedge %v", delay),
		config: fmt.Sprintf("as retrybudget with `HedgeDelay: %v`", delay),
		rt: func(base http.RoundTripper) http.RoundTripper {
			cfg := rbConfig(base)
			cfg.HedgeDelay = delay
			return retrybudget.New(cfg)
		},
	}
}

func failsafeHedgeFixed(delay time.Duration) contender {
	return contender{
		name:   fmt.Sprintf("failsafehttp, hedge %v", delay),
		config: fmt.Sprintf("`NewRoundTripper(base, hedgepolicy.NewWithDelay(%v))`: one hedge, the first result of either copy cancels the other", delay),
		rt: func(base http.RoundTripper) http.RoundTripper {
			return failsafehttp.NewRoundTripper(base, hedgepolicy.NewWithDelay[*http.Response](delay))
		},
	}
}

func failsafeHedgeQuantile(p float64) contender {
	return contender{
		name: fmt.Sprintf("failsafehttp, hedge p%v", p),
		config: fmt.Sprintf("`NewRoundTripper(base, hedgepolicy.NewWithDelayQuantile(%v, 1000, 32))`: "+
			"after the moving %vth percentile of its successful executions, once it has 32", p/100, p),
		rt: func(base http.RoundTripper) http.RoundTripper {
			return failsafehttp.NewRoundTripper(base, hedgepolicy.NewWithDelayQuantile[*http.Response](p/100, 1000, 32))
		},
	}
}

func failsafeRetryHedge(delay time.Duration) contender {
	return contender{
		name:   fmt.Sprintf("failsafehttp + hedge %v", delay),
		config: fmt.Sprintf("as failsafehttp, its retry policy around `hedgepolicy.NewWithDelay(%v)`: every attempt is hedged", delay),
		rt: func(base http.RoundTripper) http.RoundTripper {
			return failsafehttp.NewRoundTripper(base, failsafehttp.NewRetryPolicyBuilder().
				WithMaxRetries(maxAttempts-1).WithBackoff(baseDelay, maxDelay).Build(),
				hedgepolicy.NewWithDelay[*http.Response](delay))
		},
	}
}

// percentile returns the p-th percentile of the callers' waits.
func percentile(rs []result, p float64) time.Duration {
	d := make([]time.Duration, len(rs))
	for i, r := range rs {
		d[i] = r.elapsed
	}
	slices.Sort(d)
	return d[min(int(p/100*float64(len(d))), len(d)-1)]
}

// testSlowTail: the slowest 5 % of the provider's answers take 20 times
// its median (tailMedian). 2,000 GETs, 10 at a time: the callers' median
// and 99th percentile, and how many requests beyond one per call reached
// the provider.
func testSlowTail(t *testing.T) {
	const n, conc = 2000, 10
	median := tailMedian()
	var b strings.Builder
	b.WriteString("| library | p50 | p90 | p99 | p99 / p50 | max | extra requests | caller gets |\n|---|---|---|---|---|---|---|---|\n")
	for _, c := range []contender{bare(), rbDefault(), rbHedgePercentile(95), rbHedgePercentile(90), rbHedgeFixed(hedgeDelay(median)),
		failsafeHedgeQuantile(95), failsafeHedgeQuantile(90), failsafeHedgeFixed(hedgeDelay(median))} {
		srv := newCounting(t, newTailProvider(median).ServeHTTP)
		base := newBase()
		start := time.Now()
		rs := run(c, c.rt(base), srv.URL, "GET", n, conc, 10*time.Second)
		wall := time.Since(start)
		base.CloseIdleConnections()
		p50, p99 := percentile(rs, 50), percentile(rs, 99)
		extra := float64(srv.reqs.Load()-n) / n
		fmt.Fprintf(&b, "| %s | %v | %v | %v | %.2f | %v | %.1f %% | %s |\n", c.name, p50.Round(100*time.Microsecond),
			percentile(rs, 90).Round(100*time.Microsecond), p99.Round(100*time.Microsecond), float64(p99)/float64(p50),
			percentile(rs, 100).Round(time.Millisecond), 100*extra, tally(rs))
		// The budget's documented bound on hedges: 10 % of first
		// attempts, plus its floor of 10 a second.
		if strings.HasPrefix(c.name, "retrybudget, hedge") && extra > 0.10+10*wall.Seconds()/n {
			t.Errorf("%s: %.1f %% extra requests; the retry budget allows at most 10 %% plus 10 a second", c.name, 100*extra)
		}
	}
	t.Logf("slow tail: %v per answer, %v for a seeded %.0f %% of them; %d logical GETs, %d at a time\n\n%s",
		median, tailSlowdown*median, 100*tailShare, n, conc, b.String())
}

// testSlowOutage: the provider answers every request 503 after 200ms
// (overloaded: slow and failing), from the start, or after 100 GETs it
// answered (the destination known to answer, as when an outage begins).
// 100 logical GETs, 20 at a time, with and without hedging: how many
// requests reach the provider per call during the outage?
func testSlowOutage(t *testing.T) {
	const n, conc = 100, 20
	var b strings.Builder
	b.WriteString("| library | down from the start: requests per call | down after 100 answers: requests per call | caller gets (after answers) |\n|---|---|---|---|\n")
	per := map[string][2]float64{}
	fixed := rbHedgeFixed(hedgeDelay(defaultTailMedian))
	for _, c := range []contender{rbDefault(), fixed, rbHedgePercentile(95), failsafe(), failsafeRetryHedge(hedgeDelay(defaultTailMedian))} {
		var row [2]float64
		var rs []result
		for i, healthyFirst := range []bool{false, true} {
			p := newTailProvider(defaultTailMedian)
			srv := newCounting(t, p.ServeHTTP)
			base := newBase()
			rt := c.rt(base)
			if healthyFirst {
				run(c, rt, srv.URL, "GET", n, conc, 10*time.Second)
			}
			p.down.Store(true)
			before := srv.reqs.Load()
			rs = run(c, rt, srv.URL, "GET", n, conc, 10*time.Second)
			base.CloseIdleConnections()
			row[i] = float64(srv.reqs.Load()-before) / n
		}
		per[c.name] = row
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %s |\n", c.name, row[0], row[1], tally(rs))
	}
	// Down from the start, the destination never answers and no hedge
	// goes. Down after answers, the hedges sent before the first 503 came
	// back spend the retry credits the retries would have. Either way, no
	// more requests in all, give or take what the budget's floor (10
	// retries a second) refills in the time one run differs from another.
	const slack = 0.10
	for _, name := range []string{fixed.name, "retrybudget, hedge p95"} {
		for i, when := range []string{"from the start", "after answers"} {
			if got, want := per[name][i], per["retrybudget"][i]; got > want+slack {
				t.Errorf("%s: %.2f requests per call in an outage %s, more than the %.2f without hedging", name, got, when, want)
			}
		}
	}
	t.Logf("slow outage: 503 to every request after %v; %d logical GETs, %d at a time\n\n%s", outageLatency, n, conc, b.String())
}
