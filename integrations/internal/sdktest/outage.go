package sdktest

import (
	"context"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/integrations/fakes"
)

// OutageOneCallArrivals: in a total outage (503 on every effect call, or
// every connection reset), one call through the SDK at its default retry
// settings reaches the provider at most the route's MaxAttempts times: an
// SDK's own re-sends of a call the Transport gave up on are answered from
// that give-up, not sent.
func OutageOneCallArrivals(t *testing.T, s SDK) {
	for _, kind := range []string{"503", "reset"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			p := Start(t, s)
			if kind == "503" {
				p.Outage(http.StatusServiceUnavailable, 0)
			} else {
				p.ResetOutage()
			}
			tr := NewTransport(s, p, retrybudget.Config{})
			ctx, out := retrybudget.CaptureOutcome(context.Background())
			if err := s.Call(ctx, p.URL(), tr, true); err == nil {
				t.Fatal("call succeeded in an outage")
			}
			max := s.Preset().Config.MaxAttempts
			n := len(p.Targets())
			all := out.All()
			t.Logf("SDKTABLE %s one call %s: %d arrivals (route MaxAttempts %d), %d calls seen by the Transport", s.Name, kind, n, max, len(all))
			if n > max || n == 0 {
				t.Fatalf("%d arrivals for one call, want 1..%d", n, max)
			}
			for _, o := range all[s.Auxiliary+1:] {
				if !o.Repeated {
					t.Errorf("an SDK re-send was not answered from the give-up: %+v", o)
				}
			}
		})
	}
}

// NeverSoonerThanRetryAfter: a provider asking for one second between
// attempts gets no attempt sooner through an SDK that retries on its own.
func NeverSoonerThanRetryAfter(t *testing.T, s SDK) {
	if !s.Retries {
		t.Fatalf("%s makes no retries of its own", s.Name)
	}
	p := Start(t, s)
	status := s.RetriedStatus
	if status == 0 {
		status = http.StatusTooManyRequests // retryable for every method: nothing was applied
	}
	p.Outage(status, time.Second)
	tr := NewTransport(s, p, retrybudget.Config{})
	ctx := retrybudget.WithAction(context.Background(), retrybudget.Action{Operation: "pay", Key: "ra"})
	if err := s.Call(ctx, p.URL(), tr, true); err == nil {
		t.Fatal("call succeeded")
	}
	arr := p.Targets()
	if len(arr) < 2 {
		t.Fatalf("%d arrivals, want retries to measure", len(arr))
	}
	for i := 1; i < len(arr); i++ {
		if gap := arr[i].At.Sub(arr[i-1].At); gap < time.Second {
			t.Errorf("arrival %d came %v after the one asking for 1s", i+1, gap)
		}
	}
}

// Fleet makes warm+n+warm calls at concurrency conc, and returns the
// provider arrivals per call at steady state: the arrivals between the
// start of call warm+1 and the start of call warm+n+1, per n calls. The
// calls before the window fill the budget's window and the concurrency;
// the calls after it keep the stream going while the window's retries
// land, as a fleet's traffic does (a finite run alone would end on a tail
// of retries with no new calls beside them).
func Fleet(s SDK, p *fakes.Provider, tr http.RoundTripper, defaults bool, warm, n, conc int) float64 {
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	var from, to time.Time
	for i := range warm + n + warm {
		sem <- struct{}{}
		switch i {
		case warm:
			from = time.Now()
		case warm + n:
			to = time.Now()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_ = s.Call(context.Background(), p.URL(), tr, defaults)
		}()
	}
	wg.Wait()
	var arrivals int
	for _, a := range p.Targets() {
		if !a.At.Before(from) && a.At.Before(to) {
			arrivals++
		}
	}
	return float64(arrivals) / float64(n)
}

// OutageFleetAmplification: a stream of calls at concurrency 20 in a total
// outage (503 on every effect call), through the SDK at its default retry
// settings and, for an SDK that retries, as the module's builder sets it
// up: at most 1.15 arrivals per call at steady state, over 200 calls
// (SDK.FleetCalls at the SDK's defaults; 400 with RETRYBUDGET_LONG=1).
func OutageFleetAmplification(t *testing.T, s SDK) {
	long := os.Getenv("RETRYBUDGET_LONG") == "1"
	for _, defaults := range []bool{true, false} {
		if !defaults && !s.Retries {
			continue // the SDK makes no retries: one setup
		}
		mode := "defaults"
		if !defaults {
			mode = "documented setup"
		}
		n := 200
		switch {
		case long:
			n = 400
		case defaults && s.FleetCalls > 0:
			n = s.FleetCalls
		}
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			p := Start(t, s)
			p.Outage(http.StatusServiceUnavailable, 0)
			tr := NewTransport(s, p, retrybudget.Config{})
			ratio := Fleet(s, p, tr, defaults, n/2, n, 20)
			t.Logf("SDKTABLE %s %s: %.2f arrivals per call at steady state (%d calls, concurrency 20)", s.Name, mode, ratio, n)
			if ratio > 1.15 {
				t.Fatalf("%.2f arrivals per call, want at most 1.15", ratio)
			}
		})
	}
}
