package integrations_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/integrations/fakes"
)

// TestOutageOneCallArrivals: in a total outage (503 on every effect call,
// or every connection reset), one call through each SDK at its default
// retry settings reaches the provider at most the route's MaxAttempts
// times: stripe-go's and openai-go's own re-sends of a call the Transport
// gave up on are answered from that give-up, not sent.
func TestOutageOneCallArrivals(t *testing.T) {
	for _, s := range sdks() {
		for _, kind := range []string{"503", "reset"} {
			t.Run(s.name+"/"+kind, func(t *testing.T) {
				t.Parallel()
				p := start(t, s)
				if kind == "503" {
					p.Outage(http.StatusServiceUnavailable, 0)
				} else {
					p.ResetOutage()
				}
				tr := newTransport(s, p, retrybudget.Config{})
				ctx, out := retrybudget.CaptureOutcome(context.Background())
				if err := s.call(ctx, p.URL(), tr, true); err == nil {
					t.Fatal("call succeeded in an outage")
				}
				max := s.preset().Config.MaxAttempts
				n := len(p.Targets())
				all := out.All()
				t.Logf("SDKTABLE %s one call %s: %d arrivals (route MaxAttempts %d), %d calls seen by the Transport", s.name, kind, n, max, len(all))
				if n > max || n == 0 {
					t.Fatalf("%d arrivals for one call, want 1..%d", n, max)
				}
				first := 1
				if s.name == "paypal" {
					first = 2 // the token call, then the order
				}
				for _, o := range all[first:] {
					if !o.Repeated {
						t.Errorf("an SDK re-send was not answered from the give-up: %+v", o)
					}
				}
			})
		}
	}
}

// TestUncertainPOSTNeverResent: a 500 to a chat completion (OpenAI
// honours no key, so the POST may have been billed) is declared uncertain
// by the Transport; openai-go at its defaults re-sends it twice with
// X-Stainless-Retry-Count, and neither re-send reaches the provider.
func TestUncertainPOSTNeverResent(t *testing.T) {
	s := sdks()[1] // openai-go
	p := start(t, s)
	p.Fail(func(*http.Request) *fakes.Reply { return &fakes.Reply{Status: 500, AfterEffect: true} })
	tr := newTransport(s, p, retrybudget.Config{})
	ctx, out := retrybudget.CaptureOutcome(context.Background())
	if err := s.call(ctx, p.URL(), tr, true); err == nil {
		t.Fatal("call succeeded")
	}
	if n, e := len(p.Targets()), p.Effects(); n != 1 || e != 1 {
		t.Fatalf("arrivals %d, effects %d; want 1 and 1", n, e)
	}
	all := out.All()
	if len(all) != 3 {
		t.Fatalf("captured %d outcomes, want 3 (the call and openai-go's two re-sends)", len(all))
	}
	for _, o := range all {
		if !errors.Is(o.Reason, retrybudget.ErrUncertain) || !o.MaybeApplied {
			t.Errorf("outcome %+v, want ErrUncertain, maybe applied", o)
		}
	}
}

// TestNeverSoonerThanRetryAfter: a provider asking for one second
// between attempts gets no attempt sooner, through the SDKs that retry on
// their own.
func TestNeverSoonerThanRetryAfter(t *testing.T) {
	for _, s := range sdks() {
		if !s.retries {
			continue
		}
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			p := start(t, s)
			// 429 is retryable for every method: nothing was applied.
			p.Outage(http.StatusTooManyRequests, time.Second)
			if s.name == "stripe-go" {
				// stripe-go retries a 503, not a 429.
				p.Outage(http.StatusServiceUnavailable, time.Second)
			}
			tr := newTransport(s, p, retrybudget.Config{})
			ctx := retrybudget.WithAction(context.Background(), retrybudget.Action{Operation: "pay", Key: "ra"})
			if err := s.call(ctx, p.URL(), tr, true); err == nil {
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
		})
	}
}

// fleet makes warm+n+warm calls at concurrency conc, and returns the
// provider arrivals per call at steady state: the arrivals between the
// start of call warm+1 and the start of call warm+n+1, per n calls. The
// calls before the window fill the budget's window and the concurrency;
// the calls after it keep the stream going while the window's retries
// land, as a fleet's traffic does (a finite run alone would end on a tail
// of retries with no new calls beside them).
func fleet(s sdk, p *fakes.Provider, tr http.RoundTripper, defaults bool, warm, n, conc int) float64 {
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
			_ = s.call(context.Background(), p.URL(), tr, defaults)
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

// TestResetOutageFleetStripe: stripe-go re-sends a call whose connection
// was lost (it does not re-send a 503); at its defaults, through a fleet
// in a total outage of lost connections, the re-sends are answered from
// the give-ups: at most 1.15 arrivals per call at steady state.
func TestResetOutageFleetStripe(t *testing.T) {
	s := sdks()[0]
	p := start(t, s)
	p.ResetOutage()
	tr := newTransport(s, p, retrybudget.Config{})
	ratio := fleet(s, p, tr, true, 50, 100, 20)
	t.Logf("SDKTABLE stripe-go defaults, lost connections: %.2f arrivals per call at steady state (100 calls, concurrency 20)", ratio)
	if ratio > 1.15 {
		t.Fatalf("%.2f arrivals per call, want at most 1.15", ratio)
	}
}

// TestOutageFleetAmplification: a stream of calls at concurrency 20 in a
// total outage (503 on every effect call), through each SDK at its default
// retry settings and as the integrations builders set it up: at most 1.15
// arrivals per call at steady state, over 200 calls (100 for openai-go
// at its defaults, whose own sleeps make each call last seconds; 400 for
// all with RETRYBUDGET_LONG=1).
func TestOutageFleetAmplification(t *testing.T) {
	long := os.Getenv("RETRYBUDGET_LONG") == "1"
	for _, s := range sdks() {
		for _, defaults := range []bool{true, false} {
			if !defaults && !s.retries {
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
			case s.name == "openai-go" && defaults:
				n = 100
			}
			t.Run(s.name+"/"+mode, func(t *testing.T) {
				t.Parallel()
				p := start(t, s)
				p.Outage(http.StatusServiceUnavailable, 0)
				tr := newTransport(s, p, retrybudget.Config{})
				ratio := fleet(s, p, tr, defaults, n/2, n, 20)
				t.Logf("SDKTABLE %s %s: %.2f arrivals per call at steady state (%d calls, concurrency 20)", s.name, mode, ratio, n)
				if ratio > 1.15 {
					t.Fatalf("%.2f arrivals per call, want at most 1.15", ratio)
				}
			})
		}
	}
}
