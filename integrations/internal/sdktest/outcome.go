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
