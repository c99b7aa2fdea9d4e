package sdktest

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
)

// CaptureOutcomeWaitTooLong: a provider asking for an hour is beyond
// MaxWait; the SDK hides or rewrites the response, and CaptureOutcome
// still gives the caller ErrWaitTooLong, the provider's RetryAt and the
// route.
func CaptureOutcomeWaitTooLong(t *testing.T, s SDK) {
	p := Start(t, s)
	p.Outage(http.StatusTooManyRequests, time.Hour)
	tr := NewTransport(s, p, retrybudget.Config{})
	ctx, out := retrybudget.CaptureOutcome(context.Background())
	before := time.Now()
	if err := s.Call(ctx, p.URL(), tr, true); err == nil {
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
	if o.Route != s.Preset().Name {
		t.Errorf("Route = %q, want %q", o.Route, s.Preset().Name)
	}
	if n := len(p.Targets()); n != 1 {
		t.Errorf("%d arrivals, want 1", n)
	}
}

// NoKeyHeaderWhereNoneIsDocumented: a provider that documents no
// idempotency key gets none from its preset.
func NoKeyHeaderWhereNoneIsDocumented(t *testing.T, s SDK) {
	if s.Honours {
		t.Fatalf("%s's provider honours a key header", s.Name)
	}
	p := Start(t, s)
	tr := NewTransport(s, p, retrybudget.Config{})
	if err := s.Call(context.Background(), p.URL(), tr, true); err != nil {
		t.Fatal(err)
	}
	for _, a := range p.Arrivals() {
		if a.Key != "" {
			t.Errorf("%s %s carried Idempotency-Key %q", a.Method, a.Path, a.Key)
		}
	}
}

// CapturedNext: a worker that reads each SDK call with out.Next(err) and
// runs again only on StepRetry is done after one run of a success, with the
// SDK's helper calls (PayPal's token) read beside it; and it stops on a
// rejection (400), which the SDK turns into an error of its own that
// carries no Outcome.
func CapturedNext(t *testing.T, s SDK) {
	t.Run("success", func(t *testing.T) {
		p := Start(t, s)
		tr := NewTransport(s, p, retrybudget.Config{})
		ctx, out := retrybudget.CaptureOutcome(context.Background())
		var step retrybudget.Step
		runs := 0
		for runs < 3 {
			runs++
			err := s.Call(ctx, p.URL(), tr, false)
			if step, _ = out.Next(err); step != retrybudget.StepRetry {
				break
			}
		}
		if step != retrybudget.StepDone || runs != 1 {
			t.Fatalf("out.Next = %v after %d runs; want done after 1", step, runs)
		}
		if n := p.Effects(); n != 1 {
			t.Errorf("%d effects; want 1", n)
		}
		if n := len(out.All()); n != 1+s.Auxiliary {
			t.Errorf("%d calls captured; want %d (the call and %d helper calls)", n, 1+s.Auxiliary, s.Auxiliary)
		}
	})
	t.Run("rejected", func(t *testing.T) {
		p := Start(t, s)
		p.Outage(http.StatusBadRequest, 0)
		tr := NewTransport(s, p, retrybudget.Config{})
		ctx, out := retrybudget.CaptureOutcome(context.Background())
		err := s.Call(ctx, p.URL(), tr, false)
		if err == nil {
			t.Fatal("the SDK returned no error for a 400")
		}
		if step, o := out.Next(err); step != retrybudget.StepStop || !errors.Is(o.Reason, retrybudget.ErrRejected) || o.StatusCode != http.StatusBadRequest {
			t.Fatalf("out.Next = %v, reason %v, status %d (SDK error %v); want stop, ErrRejected, 400", step, o.Reason, o.StatusCode, err)
		}
		if n := p.Effects(); n != 0 {
			t.Errorf("%d effects; want 0", n)
		}
	})
}
