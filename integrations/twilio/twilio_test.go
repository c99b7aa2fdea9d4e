package twilio_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	twilioapi "github.com/twilio/twilio-go/rest/api/v2010"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/integrations/fakes"
	"github.com/retrybudget/retrybudget/integrations/internal/sdktest"
	rbtwilio "github.com/retrybudget/retrybudget/integrations/twilio"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/presets"
)

// sdk is twilio-go under test; it makes no retries of its own.
var sdk = sdktest.SDK{Name: "twilio-go", Fake: fakes.Twilio, Preset: presets.Twilio, Call: call}

// call sends one message through twilio-go, built around ctx.
func call(ctx context.Context, url string, rt http.RoundTripper, _ bool) error {
	tc, err := rbtwilio.NewClient(ctx, "AC123", "token123", url, rt)
	if err != nil {
		return err
	}
	_, err = tc.Api.CreateMessage((&twilioapi.CreateMessageParams{}).SetTo("+15550001").SetFrom("+15550002").SetBody("hi"))
	return err
}

func TestCaptureOutcomeWaitTooLong(t *testing.T) { sdktest.CaptureOutcomeWaitTooLong(t, sdk) }
func TestCapturedNext(t *testing.T)              { sdktest.CapturedNext(t, sdk) }
func TestNoKeyHeaderWhereNoneIsDocumented(t *testing.T) {
	sdktest.NoKeyHeaderWhereNoneIsDocumented(t, sdk)
}
func TestJobRunTwiceOneEffect(t *testing.T)       { sdktest.JobRunTwiceOneEffect(t, sdk) }
func TestOutageOneCallArrivals(t *testing.T)      { sdktest.OutageOneCallArrivals(t, sdk) }
func TestOutageFleetAmplification(t *testing.T)   { sdktest.OutageFleetAmplification(t, sdk) }
func TestWorkerKilledAfterTheEffect(t *testing.T) { sdktest.WorkerKilledAfterTheEffect(t, sdk) }
func TestSDKWorkerChild(t *testing.T)             { sdktest.WorkerChild(t, sdk) }

// TestTwilioActionAndDeadline: twilio-go takes no context; built with
// NewClient around a context, its call gets the context's deadline (a
// Retry-After past it ends the call at once, ErrDeadline) and its Action
// (one message for an action sent twice, through the ledger).
func TestTwilioActionAndDeadline(t *testing.T) {
	p := sdktest.Start(t, sdk)
	p.Outage(http.StatusTooManyRequests, 2*time.Second)
	tr := sdktest.NewTransport(sdk, p, retrybudget.Config{Ledger: retrybudget.LedgerConfig{Store: ledger.NewMemory(ledger.MemoryConfig{})}})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	ctx, out := retrybudget.CaptureOutcome(ctx)
	start := time.Now()
	if err := call(ctx, p.URL(), tr, true); err == nil {
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
		if err := call(actx, p.URL(), tr, true); err != nil {
			t.Fatal(err)
		}
	}
	if e := p.Effects(); e != 1 {
		t.Fatalf("effects = %d, want 1 message for one action", e)
	}
}
