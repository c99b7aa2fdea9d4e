package limiter

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/internal/testenv"
)

// strictProvider answers 429 to a request that finds limit requests
// accepted in the sliding window before it: the strictest reading of
// "limit per window", which some providers enforce to the request.
type strictProvider struct {
	// mu guards accepted.
	mu       sync.Mutex
	accepted []time.Time // accepted requests' arrivals within the last window

	limit   int
	window  time.Duration
	ok, too atomic.Int64
}

func (p *strictProvider) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	now := time.Now()
	lo := 0
	for lo < len(p.accepted) && now.Sub(p.accepted[lo]) >= p.window {
		lo++
	}
	p.accepted = p.accepted[lo:]
	limited := len(p.accepted) >= p.limit
	if !limited {
		p.accepted = append(p.accepted, now)
	}
	p.mu.Unlock()
	if limited {
		p.too.Add(1)
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	p.ok.Add(1)
}

// TestStrictWindowFigures: two limiters sharing one Redis boundary with the
// fair queue, each with a dozen workers sending as fast as they are let,
// against a provider counting a strict sliding second at the limit. The
// exact limit draws 429s (arrivals granted Period/Rate apart come closer
// together); Spread Margin draws none. A figure, not a mechanism (the
// mechanism is TestLimitSpreadKeepsStrictWindow): run it with
// RETRYBUDGET_FIGURES=1 go test -run TestStrictWindowFigures -v ./limiter/
func TestStrictWindowFigures(t *testing.T) {
	if !testenv.Figures() {
		t.Skip("figures only: " + testenv.FiguresEnv + "=1")
	}
	const rate, run = 25, 8 * time.Second
	rdb := redistest.Client(t)
	for _, lim := range []Limit{PerSecond(rate), PerSecond(rate).WithSpread(Margin)} {
		p := &strictProvider{limit: rate, window: time.Second}
		srv := httptest.NewServer(p)
		prefix := redistest.Prefix(t)
		var wg sync.WaitGroup
		ctx, cancel := context.WithTimeout(context.Background(), run)
		for range 2 {
			l := newTestRedis(t, rdb, prefix, RedisConfig{Limits: []Limit{lim}, Queue: &FairQueue{}})
			for w := range 12 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					owner := []string{"acme", "zeta"}[w%2]
					for ctx.Err() == nil {
						d, err := l.Allow(ctx, Request{Boundary: "account", Owner: owner})
						if err != nil || !d.Allowed {
							continue
						}
						resp, err := srv.Client().Post(srv.URL, "text/plain", nil)
						if err == nil {
							resp.Body.Close()
						}
					}
				}()
			}
		}
		wg.Wait()
		cancel()
		srv.Close()
		ok, too := p.ok.Load(), p.too.Load()
		t.Logf("%v: accepted %.1f/s, 429s %d (%.2f%% of arrivals)", lim, float64(ok)/run.Seconds(), too,
			100*float64(too)/float64(max(ok+too, 1)))
		if lim.Spread > 0 && too > 0 {
			t.Errorf("%v: %d provider 429s, want 0", lim, too)
		}
	}
}
