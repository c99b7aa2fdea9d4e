package retrybudget

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// withdrawN withdraws n times at now and returns how many were allowed.
func withdrawN(b *LocalBudget, dest string, now time.Time, n int) int {
	allowed := 0
	for range n {
		if b.WithdrawAt(dest, now).Allowed {
			allowed++
		}
	}
	return allowed
}

func TestBudgetPercentPlusFloor(t *testing.T) {
	b := NewLocalBudget(BudgetConfig{})
	for range 100 {
		b.DepositAt("api", t0)
	}
	// 10% of 100 first attempts, plus the floor's one second of 10 tokens.
	if got := withdrawN(b, "api", t0, 50); got != 20 {
		t.Fatalf("%d retries allowed; want 20 (10%% of 100 + floor of 10)", got)
	}
	d := b.WithdrawAt("api", t0)
	if d.Allowed || d.Deposits != 100 || d.Retries != 20 || d.Ratio() != 0.2 {
		t.Fatalf("decision %+v ratio %v; want refused with 100 deposits, 20 retries, ratio 0.2", d, d.Ratio())
	}
}

func TestBudgetFloorRefills(t *testing.T) {
	b := NewLocalBudget(BudgetConfig{Percent: -1, MinRetriesPerSec: 10})
	if got := withdrawN(b, "api", t0, 20); got != 10 {
		t.Fatalf("%d allowed with no traffic; want the floor's 10", got)
	}
	if got := withdrawN(b, "api", t0.Add(100*time.Millisecond), 5); got != 1 {
		t.Fatalf("%d allowed 100ms later; want 1 refilled token", got)
	}
	if got := withdrawN(b, "api", t0.Add(time.Hour), 50); got != 10 {
		t.Fatalf("%d allowed after an hour; want 10 (the floor holds one second)", got)
	}
}

func TestBudgetCreditsExpire(t *testing.T) {
	b := NewLocalBudget(BudgetConfig{MinRetriesPerSec: -1, Window: 10 * time.Second})
	for range 100 {
		b.DepositAt("api", t0)
	}
	if got := withdrawN(b, "api", t0.Add(5*time.Second), 5); got != 5 {
		t.Fatalf("%d allowed inside the window; want 5", got)
	}
	// 11 s later the deposits have left the window, the retries too.
	d := b.WithdrawAt("api", t0.Add(11*time.Second))
	if d.Allowed || d.Deposits != 0 {
		t.Fatalf("decision %+v after the window; want refused with no deposits", d)
	}
}

func TestBudgetIsPerDestination(t *testing.T) {
	b := NewLocalBudget(BudgetConfig{MinRetriesPerSec: -1})
	for range 10 {
		b.DepositAt("a", t0)
	}
	if !b.WithdrawAt("a", t0).Allowed || b.WithdrawAt("b", t0).Allowed {
		t.Fatal("deposits to a must fund a's retries only")
	}
}

func TestBudgetConcurrentWithdrawalsNeverOvershoot(t *testing.T) {
	b := NewLocalBudget(BudgetConfig{})
	for range 1000 {
		b.DepositAt("api", t0)
	}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			allowed.Add(int64(withdrawN(b, "api", t0, 20)))
		}()
	}
	wg.Wait()
	if got := allowed.Load(); got != 110 {
		t.Fatalf("%d retries allowed across 50 goroutines; want exactly 110", got)
	}
}

// frozenClock never moves: Sleep returns at once. Concurrent sleeps overlap
// in real life, so adding them up as fakeClock does would overstate time.
type frozenClock struct{ now time.Time }

func (f frozenClock) Now() time.Time { return f.now }
func (f frozenClock) Sleep(ctx context.Context, d time.Duration) error {
	return ctx.Err()
}

func TestBudgetBoundsAmplificationInAnOutage(t *testing.T) {
	var arrivals atomic.Int64
	p := newProvider(t, func(w http.ResponseWriter, r *http.Request) {
		arrivals.Add(1)
		w.WriteHeader(503)
	})
	clk := frozenClock{now: time.Now()}
	tr := New(Config{MaxAttempts: 4, Budget: newLocalBudget(BudgetConfig{}, clk.Now)})
	tr.clock = clk
	const logical, workers = 200, 20
	var refused atomic.Int64
	jobs := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				resp, err := send(t, tr, context.Background(), "GET", p.URL, "")
				if err != nil {
					t.Error(err)
					continue
				}
				if o := finalOutcome(t, resp); errors.Is(o.Reason, ErrBudgetExhausted) {
					refused.Add(1)
				}
			}
		}()
	}
	for range logical {
		jobs <- struct{}{}
	}
	close(jobs)
	wg.Wait()
	ratio := float64(arrivals.Load()) / logical
	t.Logf("attempts at the provider per logical request: %.3f (%d attempts, %d calls stopped by the budget)", ratio, arrivals.Load(), refused.Load())
	if ratio > 1.15 {
		t.Fatalf("amplification %.3f; want at most 1.15 (without a budget it would be 4)", ratio)
	}
	if refused.Load() == 0 {
		t.Fatal("no call reported ErrBudgetExhausted")
	}
}

func TestBudgetRefusalIsReportedAtOnce(t *testing.T) {
	p := newProvider(t, status(503))
	var events []BudgetEvent
	tr, fc := newFakeTransport(Config{
		Budget:   newLocalBudget(BudgetConfig{Percent: -1, MinRetriesPerSec: -1}, time.Now),
		Observer: Observer{Budget: func(e BudgetEvent) { events = append(events, e) }},
	})
	resp, err := send(t, tr, context.Background(), "GET", p.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	o := finalOutcome(t, resp)
	if !errors.Is(o.Reason, ErrBudgetExhausted) || o.Attempts != 1 || resp.StatusCode != 503 {
		t.Fatalf("reason %v after %d attempts, status %d; want ErrBudgetExhausted after 1 with the 503", o.Reason, o.Attempts, resp.StatusCode)
	}
	if len(fc.Sleeps()) != 0 {
		t.Fatal("slept before reporting a budget refusal")
	}
	u, _ := http.NewRequest("GET", p.URL, nil)
	if len(events) != 1 || events[0].Decision.Allowed || events[0].Destination != u.URL.Host {
		t.Fatalf("budget events %+v; want one refusal for %s", events, u.URL.Host)
	}
}

func TestAdaptiveThrottleRejectsNewCallsLocally(t *testing.T) {
	var arrivals atomic.Int64
	p := newProvider(t, func(w http.ResponseWriter, r *http.Request) {
		arrivals.Add(1)
		w.WriteHeader(429)
	})
	th := NewAdaptiveThrottle(ThrottleConfig{})
	th.rand = func() float64 { return 0.5 }
	tr, _ := newFakeTransport(Config{Throttle: th, MaxAttempts: 1})
	throttled := 0
	for range 100 {
		resp, err := send(t, tr, context.Background(), "GET", p.URL, "")
		if err != nil {
			var e *Error
			if !errors.Is(err, ErrThrottled) || !errors.As(err, &e) || e.Class != ClassCapacity || e.Attempts != 0 {
				t.Fatalf("error %v; want a capacity *Error with ErrThrottled and no attempt", err)
			}
			throttled++
			continue
		}
		finalOutcome(t, resp)
	}
	// With every attempt refused, the reject probability is n/(n+1); at a
	// pick of 0.5, rejection starts from the second call on.
	if throttled < 90 || arrivals.Load() > 10 {
		t.Fatalf("%d throttled, %d reached the provider; want most calls kept local", throttled, arrivals.Load())
	}
	u, _ := http.NewRequest("GET", p.URL, nil)
	if pr := th.RejectProbability(u.URL.Host, time.Now()); pr <= 0.5 {
		t.Fatalf("reject probability %v; want above 0.5 while everything is refused", pr)
	}
}

func TestAdaptiveThrottleLetsAHealthyProviderThrough(t *testing.T) {
	p := newProvider(t, status(200))
	th := NewAdaptiveThrottle(ThrottleConfig{})
	tr, _ := newFakeTransport(Config{Throttle: th})
	for range 50 {
		resp, err := send(t, tr, context.Background(), "GET", p.URL, "")
		if err != nil {
			t.Fatalf("healthy provider throttled: %v", err)
		}
		finalOutcome(t, resp)
	}
	if n := len(p.requests()); n != 50 {
		t.Fatalf("provider saw %d requests; want 50", n)
	}
}

func TestBudgetRefusalRetryAtIsTheProvidersOnly(t *testing.T) {
	// Regression: RetryAt was the next backoff time, a few ms away,
	// inviting the caller straight back against a budget that said no.
	for _, tt := range []struct {
		name  string
		first step
		want  time.Duration // 0: zero time
	}{
		{"no Retry-After", status(503), 0},
		{"Retry-After", status(503, "Retry-After", "30"), 30 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newProvider(t, tt.first)
			tr, fc := newFakeTransport(Config{Budget: newLocalBudget(BudgetConfig{Percent: -1, MinRetriesPerSec: -1}, time.Now)})
			start := fc.Now()
			resp, err := send(t, tr, context.Background(), "GET", p.URL, "")
			if err != nil {
				t.Fatal(err)
			}
			o := finalOutcome(t, resp)
			if !errors.Is(o.Reason, ErrBudgetExhausted) {
				t.Fatalf("reason %v; want ErrBudgetExhausted", o.Reason)
			}
			if tt.want == 0 && !o.RetryAt.IsZero() || tt.want > 0 && o.RetryAt.Sub(start) < tt.want-time.Second {
				t.Fatalf("RetryAt start+%v; want %v", o.RetryAt.Sub(start), tt.want)
			}
		})
	}
}

func TestBudgetRule(t *testing.T) {
	tests := []struct {
		in   BudgetConfig
		want BudgetRule
	}{
		{BudgetConfig{}, BudgetRule{Percent: 0.1, MinRetriesPerSec: 10, Window: 10 * time.Second}},
		{BudgetConfig{Percent: -1, MinRetriesPerSec: -1, Window: -1}, BudgetRule{Percent: 0, MinRetriesPerSec: 0, Window: 10 * time.Second}},
		{BudgetConfig{Percent: 2, MinRetriesPerSec: 3, Window: time.Second}, BudgetRule{Percent: 1, MinRetriesPerSec: 3, Window: time.Second}},
	}
	for _, tt := range tests {
		if got := tt.in.Rule(); got != tt.want {
			t.Errorf("%+v.Rule() = %+v; want %+v", tt.in, got, tt.want)
		}
	}
}
