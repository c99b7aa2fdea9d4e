package stripe_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stripe/stripe-go/v85"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/integrations/fakes"
	"github.com/retrybudget/retrybudget/integrations/internal/sdktest"
	rbstripe "github.com/retrybudget/retrybudget/integrations/stripe"
	"github.com/retrybudget/retrybudget/presets"
)

// sdk is stripe-go under test. stripe-go re-sends a 503 and a lost
// connection (not a 429) and puts a random Idempotency-Key on every POST.
var sdk = sdktest.SDK{
	Name: "stripe-go", Fake: fakes.Stripe, Preset: presets.Stripe,
	Retries: true, RetriedStatus: http.StatusServiceUnavailable,
	Honours: true, SetsOwnKey: true, Call: call,
}

// call creates one charge through stripe-go.
func call(ctx context.Context, url string, rt http.RoundTripper, defaults bool) error {
	sc := rbstripe.NewClient("sk_test_123", url, rt)
	if defaults {
		sc = stripe.NewClient("sk_test_123", stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
			HTTPClient:    &http.Client{Transport: rt},
			URL:           stripe.String(url),
			LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull},
		})))
	}
	_, err := sc.V1Charges.Create(ctx, &stripe.ChargeCreateParams{Amount: stripe.Int64(100), Currency: stripe.String("usd")})
	return err
}

func TestCaptureOutcomeWaitTooLong(t *testing.T)  { sdktest.CaptureOutcomeWaitTooLong(t, sdk) }
func TestCapturedNext(t *testing.T)               { sdktest.CapturedNext(t, sdk) }
func TestJobRunTwiceOneEffect(t *testing.T)       { sdktest.JobRunTwiceOneEffect(t, sdk) }
func TestActionKeyWinsWithoutLedger(t *testing.T) { sdktest.ActionKeyWinsWithoutLedger(t, sdk) }
func TestOutageOneCallArrivals(t *testing.T)      { sdktest.OutageOneCallArrivals(t, sdk) }
func TestNeverSoonerThanRetryAfter(t *testing.T)  { sdktest.NeverSoonerThanRetryAfter(t, sdk) }
func TestOutageFleetAmplification(t *testing.T)   { sdktest.OutageFleetAmplification(t, sdk) }
func TestWorkerKilledAfterTheEffect(t *testing.T) { sdktest.WorkerKilledAfterTheEffect(t, sdk) }
func TestSDKWorkerChild(t *testing.T)             { sdktest.WorkerChild(t, sdk) }

// TestResetOutageFleetStripe: stripe-go re-sends a call whose connection
// was lost (it does not re-send a 503); at its defaults, through a fleet
// in a total outage of lost connections, the re-sends are answered from
// the give-ups: at most 1.15 arrivals per call at steady state.
func TestResetOutageFleetStripe(t *testing.T) {
	p := sdktest.Start(t, sdk)
	p.ResetOutage()
	tr := sdktest.NewTransport(sdk, p, retrybudget.Config{})
	ratio := sdktest.Fleet(sdk, p, tr, true, 50, 100, 20)
	t.Logf("SDKTABLE stripe-go defaults, lost connections: %.2f arrivals per call at steady state (100 calls, concurrency 20)", ratio)
	if ratio > 1.15 {
		t.Fatalf("%.2f arrivals per call, want at most 1.15", ratio)
	}
}

// TestPresetAtNamesTheRoute: an unmatched host names no route; the
// preset pointed At the server names its provider.
func TestPresetAtNamesTheRoute(t *testing.T) {
	p := sdktest.Start(t, sdk)
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
		if err := call(ctx, p.URL(), tr, false); err != nil {
			t.Fatal(err)
		}
		if o, _ := out.Last(); o.Route != tt.want {
			t.Errorf("Route = %q, want %q", o.Route, tt.want)
		}
	}
}
