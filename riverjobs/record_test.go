package riverjobs

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestRunIsDecidedOnItsFirstHeldCall: an SDK that re-sends a call on its
// own makes two calls through the Transport for one of the worker's; when
// the first may have been applied (held) and the re-send is refused by the
// rate limiter, the SDK returns an error of its own, and the job is held,
// not snoozed: running it again would send the held call again.
func TestRunIsDecidedOnItsFirstHeldCall(t *testing.T) {
	later := time.Now().Add(time.Minute)
	answers := []retrybudget.Outcome{
		{Reason: retrybudget.ErrUncertain, Class: retrybudget.ClassMaybeSent, MaybeApplied: true, Attempts: 1},
		{Reason: retrybudget.ErrRateLimited, Class: retrybudget.ClassCapacity, RetryAt: later},
	}
	calls := 0
	rec := Record(roundTripFunc(func(*http.Request) (*http.Response, error) {
		o := answers[calls]
		calls++
		return nil, &retrybudget.Error{Outcome: o}
	}))
	r := &run{}
	ctx := withRun(context.Background(), r)
	for range answers {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://provider.test/charges", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rec.RoundTrip(req); err == nil {
			t.Fatal("RoundTrip: no error")
		}
	}
	o, ok, n, attempts := r.snapshot()
	if !ok || n != 2 || attempts != 1 {
		t.Fatalf("snapshot: ok %v, %d calls, %d attempts; want true, 2, 1", ok, n, attempts)
	}
	if !errors.Is(o.Reason, retrybudget.ErrUncertain) {
		t.Errorf("snapshot's Outcome: %v; want the held call's", o.Reason)
	}
	sdkErr := errors.New("sdk: request failed after 2 tries")
	if d := Decide(Config{}, sdkErr, o, ok, 0, time.Now(), 0); d.Verb != VerbHold {
		t.Errorf("Decide = %s; want %s", d.Verb, VerbHold)
	}
}
