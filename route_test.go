package retrybudget

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/budget"
	"github.com/retrybudget/retrybudget/limiter"
)

func TestRouteMatching(t *testing.T) {
	rs := newRoutes(Config{Routes: []Route{
		{Host: "api.stripe.com"},
		{Host: "api.stripe.com", PathPrefix: "/v1/refunds"},
		{Host: "*.example.com"},
		{Host: "localhost:8080"},
	}}, realClock{})
	tests := []struct {
		url  string
		want int // index of the route; -1 for none
	}{
		{"https://api.stripe.com/v1/charges", 0},
		{"https://API.Stripe.com:443/v1/charges", 0},
		{"https://api.stripe.com/v1/refunds/re_1", 1},
		{"https://eu.api.example.com/x", 2},
		{"https://example.com/x", -1},
		{"http://localhost:8080/", 3},
		{"http://localhost:9090/", -1},
		{"https://api.paypal.com/", -1},
	}
	for _, tt := range tests {
		u, _ := url.Parse(tt.url)
		got := match(rs, &http.Request{URL: u})
		var want *policy
		if tt.want >= 0 {
			want = rs[tt.want].p
		}
		if got != want {
			t.Errorf("%s matched route %p; want route %d", tt.url, got, tt.want)
		}
	}
}

func TestRoutesApplyTheirOwnPolicy(t *testing.T) {
	p := newProvider(t, status(503, "Retry-After", "0"))
	u, _ := url.Parse(p.URL)
	var attempts []AttemptEvent
	tr, _ := newFakeTransport(Config{
		MaxAttempts: 4,
		Observer:    Observer{Attempt: func(e AttemptEvent) { attempts = append(attempts, e) }},
		Routes: []Route{{Host: u.Host, PathPrefix: "/payments", Config: Config{
			MaxAttempts: 2, KeyHeader: "PayPal-Request-Id", Budget: budget.Unlimited{},
		}}},
	})
	resp, err := send(context.Background(), t, tr, "POST", p.URL+"/payments", "x")
	if err != nil {
		t.Fatal(err)
	}
	o := finalOutcome(t, resp)
	if o.Attempts != 2 || !errors.Is(o.Reason, ErrAttemptsExhausted) || p.requests()[0].key != "" {
		t.Fatalf("routed call: %d attempts, reason %v; want the route's 2 attempts, key in its own header", o.Attempts, o.Reason)
	}
	if len(attempts) != 2 {
		t.Fatalf("%d attempt events; want the Transport's Observer inherited by the route", len(attempts))
	}
	resp, err = send(context.Background(), t, tr, "GET", p.URL+"/other", "")
	if err != nil {
		t.Fatal(err)
	}
	if o := finalOutcome(t, resp); o.Attempts != 4 {
		t.Fatalf("unrouted call: %d attempts; want the default 4", o.Attempts)
	}
}

// hinting classifies like DefaultClassifier and adds a fixed hint and pause.
type hinting struct {
	hint  RetryHint
	pause time.Duration
}

func (h hinting) Classify(a *AttemptResult) Classification {
	c := DefaultClassifier{}.Classify(a)
	c.Hint = h.hint
	if h.pause > 0 {
		c.PauseUntil = a.Now.Add(h.pause)
	}
	return c
}

func TestRetryHintsOverrideTheClass(t *testing.T) {
	tests := []struct {
		name     string
		first    step
		hint     RetryHint
		attempts int
		reason   error
	}{
		{"no-retry on a 500", status(500), HintNoRetry, 1, ErrRejected},
		{"no-retry on a 429", status(429), HintNoRetry, 1, ErrRejected},
		{"retry on a 409", status(409), HintRetry, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProvider(t, tt.first, status(200))
			tr, _ := newFakeTransport(Config{Classifier: hinting{hint: tt.hint}})
			ctx := WithAction(context.Background(), Action{Key: tt.name})
			resp, err := send(ctx, t, tr, "POST", p.URL, "x")
			if err != nil {
				t.Fatal(err)
			}
			o := finalOutcome(t, resp)
			if o.Attempts != tt.attempts || !errors.Is(o.Reason, tt.reason) {
				t.Fatalf("%d attempts, reason %v; want %d, %v", o.Attempts, o.Reason, tt.attempts, tt.reason)
			}
		})
	}
}

func TestPauseUntilCoolsTheBoundaryEvenOnSuccess(t *testing.T) {
	p := newProvider(t, status(200))
	lim := &scriptedLimiter{decisions: []limiter.Decision{allow}}
	var events []LimitEvent
	tr, fc := newFakeTransport(Config{Limiter: lim, Classifier: hinting{pause: 30 * time.Second},
		Observer: Observer{Cooldown: func(e LimitEvent) { events = append(events, e) }}})
	resp, err := send(context.Background(), t, tr, "GET", p.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	finalOutcome(t, resp)
	if len(lim.cooldowns) != 1 || lim.cooldowns[0].Sub(fc.Now()) < 29*time.Second || len(events) != 1 {
		t.Fatalf("cooldowns %v, events %d; want one 30s pause after a successful answer", lim.cooldowns, len(events))
	}
}

func TestObserversCallsEach(t *testing.T) {
	var a, b int
	o := Observer{Retry: func(RetryEvent) { a++ }}.Join(Observer{}, Observer{Retry: func(RetryEvent) { b++ }})
	o.Retry(RetryEvent{})
	if a != 1 || b != 1 || o.Attempt != nil {
		t.Fatalf("a=%d b=%d attempt=%v; want both Retry callbacks once and no Attempt", a, b, o.Attempt != nil)
	}
}
