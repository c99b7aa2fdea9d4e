package retrybudget

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/budget"
)

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
	tr := newTransport(Config{MaxAttempts: 4}, clk)
	const logical, workers = 200, 20
	var refused atomic.Int64
	jobs := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				resp, err := send(context.Background(), t, tr, "GET", p.URL, "")
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
		Budget:   budget.NewLocal(budget.Config{Percent: -1, MinRetriesPerSec: -1}),
		Observer: Observer{Budget: func(e BudgetEvent) { events = append(events, e) }},
	})
	resp, err := send(context.Background(), t, tr, "GET", p.URL, "")
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
	th := budget.NewThrottle(budget.ThrottleConfig{})
	tr, fc := newFakeTransport(Config{Throttle: th, MaxAttempts: 1})
	u, _ := http.NewRequest("GET", p.URL, nil)
	host := u.URL.Host
	// The first call goes out (nothing counted yet) and the Transport
	// records its refusal: one request, no accept.
	resp, err := send(context.Background(), t, tr, "GET", p.URL, "")
	if err != nil {
		t.Fatalf("first call throttled: %v", err)
	}
	finalOutcome(t, resp)
	if pr := th.RejectProbability(host, fc.Now()); arrivals.Load() != 1 || pr != 0.5 {
		t.Fatalf("%d arrivals, reject probability %v; want 1 and 0.5 after one refused attempt", arrivals.Load(), pr)
	}
	// A long run of refusals pushes the probability to 1−1e-5: the random
	// pick (budget's own unit test pins it) lets one in 100,000 through.
	for range 100_000 {
		th.Record(host, fc.Now(), false)
	}
	throttled := 0
	for range 100 {
		resp, err := send(context.Background(), t, tr, "GET", p.URL, "")
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
	if throttled < 99 || arrivals.Load() > 2 {
		t.Fatalf("%d throttled, %d reached the provider; want the calls kept local", throttled, arrivals.Load())
	}
}

func TestAdaptiveThrottleLetsAHealthyProviderThrough(t *testing.T) {
	p := newProvider(t, status(200))
	th := budget.NewThrottle(budget.ThrottleConfig{})
	tr, _ := newFakeTransport(Config{Throttle: th})
	for range 50 {
		resp, err := send(context.Background(), t, tr, "GET", p.URL, "")
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
			tr, fc := newFakeTransport(Config{Budget: budget.NewLocal(budget.Config{Percent: -1, MinRetriesPerSec: -1})})
			start := fc.Now()
			resp, err := send(context.Background(), t, tr, "GET", p.URL, "")
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

func TestRetryAfterIsNeverUndercut(t *testing.T) {
	date := func() string { return time.Now().Add(5 * time.Second).UTC().Format(http.TimeFormat) }
	tests := []struct {
		name  string
		first step
		min   time.Duration
	}{
		{"delta seconds", status(429, "Retry-After", "3"), 3 * time.Second},
		{"http date", func(w http.ResponseWriter, r *http.Request) {
			status(503, "Retry-After", date())(w, r)
		}, 3 * time.Second}, // at least the date minus test latency and second truncation
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProvider(t, tt.first, status(200))
			tr, fc := newFakeTransport(Config{BaseDelay: 10 * time.Millisecond})
			resp, err := send(context.Background(), t, tr, "GET", p.URL, "")
			if err != nil {
				t.Fatal(err)
			}
			if o := finalOutcome(t, resp); o.Attempts != 2 {
				t.Fatalf("attempts %d; want 2", o.Attempts)
			}
			sleeps := fc.Sleeps()
			if len(sleeps) != 1 || sleeps[0] < tt.min || sleeps[0] > 6*time.Second {
				t.Fatalf("sleeps %v; want one sleep in [%v, 6s]", sleeps, tt.min)
			}
		})
	}
}

func TestBackoffIsExponentialAndCapped(t *testing.T) {
	p := newProvider(t, status(503))
	tr, fc := newFakeTransport(Config{MaxAttempts: 6, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second, Jitter: -1})
	resp, err := send(context.Background(), t, tr, "GET", p.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	o := finalOutcome(t, resp)
	if !errors.Is(o.Reason, ErrAttemptsExhausted) || o.Attempts != 6 {
		t.Fatalf("reason %v after %d attempts; want ErrAttemptsExhausted after 6", o.Reason, o.Attempts)
	}
	want := []time.Duration{100, 200, 400, 800, 1000}
	got := fc.Sleeps()
	if len(got) != len(want) {
		t.Fatalf("sleeps %v; want %v ms", got, want)
	}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("sleep %d = %v; want %v", i, got[i], want[i]*time.Millisecond)
		}
	}
	if o.RetryAt.IsZero() {
		t.Fatal("RetryAt is zero after exhausting attempts; want the next backoff time")
	}
}

func TestJitterStaysInRange(t *testing.T) {
	p := newProvider(t, status(503))
	tr, fc := newFakeTransport(Config{Budget: budget.Unlimited{}, MaxAttempts: 40, BaseDelay: 100 * time.Millisecond, MaxDelay: 100 * time.Millisecond, Jitter: 0.5})
	resp, err := send(context.Background(), t, tr, "GET", p.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	finalOutcome(t, resp)
	distinct := map[time.Duration]bool{}
	for _, d := range fc.Sleeps() {
		if d < 50*time.Millisecond || d > 100*time.Millisecond {
			t.Fatalf("sleep %v outside [50ms, 100ms] (MaxDelay caps jitter)", d)
		}
		distinct[d] = true
	}
	if len(distinct) < 10 {
		t.Fatalf("only %d distinct delays in 39 sleeps: jitter is not applied", len(distinct))
	}
}

func TestGivesUpAtOnceWhenWaitCannotFit(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		ctxWait time.Duration // context deadline; 0 means none
		first   step
		reason  error
		retryIn time.Duration // RetryAt - now, at least
	}{
		{"retry-after past context deadline", Config{}, 2 * time.Second, status(429, "Retry-After", "10"), ErrDeadline, 10 * time.Second},
		{"retry-after past config deadline", Config{Deadline: 2 * time.Second}, 0, status(503, "Retry-After", "5"), ErrDeadline, 5 * time.Second},
		{"retry-after beyond MaxWait", Config{MaxWait: time.Minute}, 0, status(429, "Retry-After", "3600"), ErrWaitTooLong, time.Hour},
		{"backoff past deadline", Config{BaseDelay: 3 * time.Second, Jitter: -1}, 2 * time.Second, status(503), ErrDeadline, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProvider(t, tt.first, status(200))
			tr, fc := newFakeTransport(tt.cfg)
			ctx := context.Background()
			if tt.ctxWait > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.ctxWait)
				defer cancel()
			}
			start := fc.Now()
			resp, err := send(ctx, t, tr, "GET", p.URL, "")
			if err != nil {
				t.Fatalf("RoundTrip error %v; want the provider's response", err)
			}
			o := finalOutcome(t, resp)
			if !errors.Is(o.Reason, tt.reason) || o.Attempts != 1 {
				t.Fatalf("reason %v after %d attempts; want %v after 1", o.Reason, o.Attempts, tt.reason)
			}
			if s := fc.Sleeps(); len(s) != 0 {
				t.Fatalf("slept %v; want no sleep when the wait cannot fit", s)
			}
			if o.RetryAt.Sub(start) < tt.retryIn {
				t.Fatalf("RetryAt %v is %v after start; want at least %v", o.RetryAt, o.RetryAt.Sub(start), tt.retryIn)
			}
			var e *Error
			if !errors.As(o.Err(), &e) || e.StatusCode != resp.StatusCode || !e.RetryAt.Equal(o.RetryAt) {
				t.Fatalf("Outcome.Err() = %#v; want an *Error carrying the outcome", o.Err())
			}
		})
	}
}

func TestContextCanceledWhileWaiting(t *testing.T) {
	p := newProvider(t, status(503))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr, _ := newFakeTransport(Config{Observer: Observer{Retry: func(RetryEvent) { cancel() }}})
	_, err := send(ctx, t, tr, "GET", p.URL, "")
	var e *Error
	if !errors.Is(err, context.Canceled) || !errors.As(err, &e) || e.Attempts != 1 {
		t.Fatalf("error %v; want context.Canceled as *Error after 1 attempt", err)
	}
}
