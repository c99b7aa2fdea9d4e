package limiter

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

// arrivals grants one stream of requests as fast as l allows for span, by
// virtual time, and returns when each reached a provider that got it a
// random delay in [0, spread] after its grant.
func arrivals(t *testing.T, l *Local, span, spread time.Duration, seed uint64) []time.Time {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0))
	var out []time.Time
	for now := t0; now.Before(t0.Add(span)); {
		d, err := l.AllowAt(Request{Boundary: "provider"}, now)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Allowed {
			now = now.Add(d.RetryAfter)
			continue
		}
		out = append(out, now.Add(time.Duration(rng.Int64N(int64(spread)+1))))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// mostInWindow is the largest number of arrivals a provider counting a
// strict sliding window of length w sees at once: arrivals less than w
// apart share a window.
func mostInWindow(at []time.Time, w time.Duration) int {
	most, lo := 0, 0
	for hi := range at {
		for at[hi].Sub(at[lo]) >= w {
			lo++
		}
		most = max(most, hi-lo+1)
	}
	return most
}

// TestLimitSpreadKeepsStrictWindow: grants spaced exactly Period/Rate apart
// arrive at a provider closer together when the time from grant to arrival
// varies, so a provider counting a strict sliding window at Rate sees
// Rate+1; with Spread at least that variation it never does, whatever the
// delays, since Rate grants then span Period+Spread.
func TestLimitSpreadKeepsStrictWindow(t *testing.T) {
	const rate = 25
	jitter := 40 * time.Millisecond
	exceeded := 0
	for seed := range uint64(20) {
		exact := arrivals(t, mustLocal(t, LocalConfig{Limits: []Limit{PerSecond(rate)}}, nil), time.Minute, jitter, seed)
		if mostInWindow(exact, time.Second) > rate {
			exceeded++
		}
		spread := arrivals(t, mustLocal(t, LocalConfig{Limits: []Limit{PerSecond(rate).WithSpread(jitter)}}, nil), time.Minute, jitter, seed)
		if got := mostInWindow(spread, time.Second); got > rate {
			t.Fatalf("seed %d: Spread %v: %d arrivals in one second, want at most %d", seed, jitter, got, rate)
		}
		// The price: Rate per Period+Spread, not less.
		if perSecond := float64(len(spread)) / time.Minute.Seconds(); perSecond < rate*0.95/1.04 {
			t.Fatalf("seed %d: Spread %v sent %.1f/s, want about %.1f/s", seed, jitter, perSecond, rate/1.04)
		}
	}
	// Not every seed's delays line up, but most do: the exact limit is not
	// enough for a strict window.
	if exceeded < 10 {
		t.Fatalf("without Spread, %d of 20 seeds exceeded %d in a second; the scenario no longer shows the problem", exceeded, rate)
	}
}

// TestLimitSpreadWithBurst: Window(n, period, burst) with Spread keeps n in
// every strict window of period at the provider, bursts included.
func TestLimitSpreadWithBurst(t *testing.T) {
	jitter := 30 * time.Millisecond
	lim := Window(20, time.Second, 5).WithSpread(jitter)
	for seed := range uint64(10) {
		at := arrivals(t, mustLocal(t, LocalConfig{Limits: []Limit{lim}}, nil), 30*time.Second, jitter, seed)
		if got := mostInWindow(at, time.Second); got > 20 {
			t.Fatalf("seed %d: %v: %d arrivals in one second, want at most 20", seed, lim, got)
		}
	}
}

func TestLimitSpreadValidation(t *testing.T) {
	if _, err := NewLocal(LocalConfig{Limits: []Limit{PerSecond(5).WithSpread(-time.Millisecond)}}); err == nil {
		t.Fatal("a negative Spread was accepted")
	}
	if got, want := PerSecond(25).WithSpread(Margin).String(), "25/1s burst 1 spread 50ms"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}
