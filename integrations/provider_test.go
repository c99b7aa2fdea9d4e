package integrations_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/integrations/fakes"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/limiter"
	"github.com/retrybudget/retrybudget/presets"
)

// TestCaptureOutcomeWaitTooLong: a provider asking for an hour is beyond
// MaxWait; every SDK hides or rewrites the response, and CaptureOutcome
// still gives the caller ErrWaitTooLong, the provider's RetryAt and the
// route.
func TestCaptureOutcomeWaitTooLong(t *testing.T) {
	for _, s := range sdks() {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			p := start(t, s)
			p.Outage(http.StatusTooManyRequests, time.Hour)
			tr := newTransport(s, p, retrybudget.Config{})
			ctx, out := retrybudget.CaptureOutcome(context.Background())
			before := time.Now()
			if err := s.call(ctx, p.URL(), tr, true); err == nil {
				t.Fatal("call succeeded")
			}
			o, ok := out.Last()
			if !ok {
				t.Fatal("no outcome captured")
			}
			if !errors.Is(o.Reason, retrybudget.ErrWaitTooLong) {
				t.Fatalf("Reason = %v, want ErrWaitTooLong (%+v)", o.Reason, o)
			}
			if d := o.RetryAt.Sub(before); d < time.Hour-time.Second || d > time.Hour+5*time.Second {
				t.Errorf("RetryAt in %v, want the provider's hour", d)
			}
			if o.Route != s.preset().Name {
				t.Errorf("Route = %q, want %q", o.Route, s.preset().Name)
			}
			if n := len(p.Targets()); n != 1 {
				t.Errorf("%d arrivals, want 1", n)
			}
		})
	}
}

// TestTwilioActionAndDeadline: twilio-go takes no context; built with
// integrations.Twilio around a context, its call gets the context's
// deadline (a Retry-After past it ends the call at once, ErrDeadline) and
// its Action (one message for an action sent twice, through the ledger).
func TestTwilioActionAndDeadline(t *testing.T) {
	s := sdks()[5]
	p := start(t, s)
	p.Outage(http.StatusTooManyRequests, 2*time.Second)
	tr := newTransport(s, p, retrybudget.Config{Ledger: retrybudget.LedgerConfig{Store: ledger.NewMemory(ledger.MemoryConfig{})}})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	ctx, out := retrybudget.CaptureOutcome(ctx)
	start := time.Now()
	if err := s.call(ctx, p.URL(), tr, true); err == nil {
		t.Fatal("call succeeded")
	}
	if el := time.Since(start); el > 400*time.Millisecond {
		t.Errorf("call took %v; a wait past the deadline must end it at once", el)
	}
	if o, _ := out.Last(); !errors.Is(o.Reason, retrybudget.ErrDeadline) {
		t.Errorf("Reason = %v, want ErrDeadline", o.Reason)
	}

	p.Outage(0, 0)
	actx := retrybudget.WithAction(context.Background(), retrybudget.Action{Operation: "sms", Key: "m-1"})
	for range 2 {
		if err := s.call(actx, p.URL(), tr, true); err != nil {
			t.Fatal(err)
		}
	}
	if e := p.Effects(); e != 1 {
		t.Fatalf("effects = %d, want 1 message for one action", e)
	}
}

// TestSlackBoundaryIsTheWorkspaceToken: slack-go sends the token in the
// form body; workspace A's 429 (Retry-After 5) pauses A alone, never B.
func TestSlackBoundaryIsTheWorkspaceToken(t *testing.T) {
	s := sdks()[4]
	p := start(t, s)
	p.Fail(func(r *http.Request) *fakes.Reply {
		if err := r.ParseForm(); err == nil && r.PostForm.Get("token") == "xoxb-workspace-a" {
			return &fakes.Reply{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"5"}}}
		}
		return nil
	})
	lim, err := limiter.NewLocal(limiter.LocalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	tr := newTransport(s, p, retrybudget.Config{Limiter: lim})
	ctxA, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := slackCall("xoxb-workspace-a")(ctxA, p.URL(), tr, true); err == nil {
		t.Fatal("workspace A succeeded through its 429")
	}
	start := time.Now()
	if err := slackCall("xoxb-workspace-b")(context.Background(), p.URL(), tr, true); err != nil {
		t.Fatalf("workspace B: %v", err)
	}
	if el := time.Since(start); el > time.Second {
		t.Fatalf("workspace B waited %v behind workspace A's pause", el)
	}
	// A is paused: its next call is refused locally, nothing sent.
	before := len(p.Arrivals())
	ctxA2, cancel2 := context.WithTimeout(context.Background(), time.Second)
	defer cancel2()
	ctxA2, out := retrybudget.CaptureOutcome(ctxA2)
	_ = slackCall("xoxb-workspace-a")(ctxA2, p.URL(), tr, true)
	if o, _ := out.Last(); !errors.Is(o.Reason, retrybudget.ErrRateLimited) {
		t.Errorf("workspace A again: Reason %v, want ErrRateLimited", o.Reason)
	}
	if n := len(p.Arrivals()); n != before {
		t.Errorf("paused workspace A sent %d requests", n-before)
	}
}

// TestGitHubSecondaryLimitEndsAtOnce: a secondary rate limit without
// retry-after (a 403 naming the secondary limit docs) asks for a minute;
// the GitHub preset ends the call at once with RetryAt, with no deadline
// at all, where the Transport used to block a minute in RoundTrip.
func TestGitHubSecondaryLimitEndsAtOnce(t *testing.T) {
	s := sdks()[3]
	p := start(t, s)
	p.Fail(func(*http.Request) *fakes.Reply {
		return &fakes.Reply{Status: http.StatusForbidden,
			Body: `{"message":"You have exceeded a secondary rate limit.","documentation_url":"https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`}
	})
	tr := newTransport(s, p, retrybudget.Config{})
	ctx, out := retrybudget.CaptureOutcome(context.Background())
	start := time.Now()
	if err := s.call(ctx, p.URL(), tr, true); err == nil {
		t.Fatal("call succeeded")
	}
	if el := time.Since(start); el > time.Second {
		t.Fatalf("call took %v, want an immediate end", el)
	}
	o, _ := out.Last()
	if !errors.Is(o.Reason, retrybudget.ErrWaitTooLong) || o.RetryAt.Sub(start) < 59*time.Second {
		t.Fatalf("outcome %+v, want ErrWaitTooLong with RetryAt a minute on", o)
	}
}

// TestNoKeyHeaderWhereNoneIsDocumented: GitHub, Slack, Twilio and OpenAI
// document no idempotency key; their presets send none.
func TestNoKeyHeaderWhereNoneIsDocumented(t *testing.T) {
	for _, s := range sdks() {
		if s.honours {
			continue
		}
		t.Run(s.name, func(t *testing.T) {
			p := start(t, s)
			tr := newTransport(s, p, retrybudget.Config{})
			if err := s.call(context.Background(), p.URL(), tr, true); err != nil {
				t.Fatal(err)
			}
			for _, a := range p.Arrivals() {
				if a.Key != "" {
					t.Errorf("%s %s carried Idempotency-Key %q", a.Method, a.Path, a.Key)
				}
			}
		})
	}
}

// TestPayPalTokenCallCarriesNoAction: plutov/paypal fetches its OAuth
// token with the caller's context; the token POST takes neither the
// Action's key nor its ledger record, and the order is sent once under the
// Action's key.
func TestPayPalTokenCallCarriesNoAction(t *testing.T) {
	s := sdks()[6]
	p := start(t, s)
	tr := newTransport(s, p, retrybudget.Config{Ledger: retrybudget.LedgerConfig{Store: ledger.NewMemory(ledger.MemoryConfig{})}})
	a := retrybudget.Action{Operation: "order", Key: "o-1"}
	c, err := newPayPal(p.URL(), tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := c(retrybudget.WithAction(context.Background(), a)); err != nil {
		t.Fatal(err)
	}
	var token, order int
	for _, arr := range p.Arrivals() {
		switch {
		case strings.HasSuffix(arr.Path, "/oauth2/token"):
			token++
			if arr.Key == a.IdempotencyKey() {
				t.Error("the token call carried the Action's key")
			}
		case arr.Target:
			order++
			if arr.Key != a.IdempotencyKey() {
				t.Errorf("order key %q, want the Action's", arr.Key)
			}
		}
	}
	if token != 1 || order != 1 || p.Effects() != 1 {
		t.Fatalf("token calls %d, order calls %d, effects %d; want 1, 1, 1", token, order, p.Effects())
	}
}

// TestPresetAtNamesTheRoute: an unmatched host names no route; the
// preset pointed At the server names its provider.
func TestPresetAtNamesTheRoute(t *testing.T) {
	p := fakes.Stripe()
	defer p.Close()
	for _, tt := range []struct {
		routes []retrybudget.Route
		want   string
	}{
		{nil, ""},
		{[]retrybudget.Route{presets.Stripe()}, ""},
		{[]retrybudget.Route{presets.Stripe().At(p.URL())}, "stripe"},
	} {
		tr := retrybudget.New(retrybudget.Config{Routes: tt.routes})
		ctx, out := retrybudget.CaptureOutcome(context.Background())
		if err := stripeCall(ctx, p.URL(), tr, false); err != nil {
			t.Fatal(err)
		}
		if o, _ := out.Last(); o.Route != tt.want {
			t.Errorf("Route = %q, want %q", o.Route, tt.want)
		}
	}
}
