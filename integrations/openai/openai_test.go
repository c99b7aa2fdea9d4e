package openai_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/integrations/fakes"
	"github.com/retrybudget/retrybudget/integrations/internal/sdktest"
	rbopenai "github.com/retrybudget/retrybudget/integrations/openai"
	"github.com/retrybudget/retrybudget/presets"
)

// sdk is openai-go under test. openai-go re-sends at its defaults,
// sleeping between re-sends, so its outage fleet is smaller.
var sdk = sdktest.SDK{
	Name: "openai-go", Fake: fakes.OpenAI, Preset: presets.OpenAI,
	Retries: true, FleetCalls: 100, Call: call,
}

// call creates one chat completion through openai-go.
func call(ctx context.Context, url string, rt http.RoundTripper, defaults bool) error {
	c := rbopenai.NewClient("sk-test", url+"/v1/", rt)
	if defaults {
		c = openai.NewClient(option.WithAPIKey("sk-test"), option.WithBaseURL(url+"/v1/"),
			option.WithHTTPClient(&http.Client{Transport: rt}))
	}
	_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	return err
}

func TestCaptureOutcomeWaitTooLong(t *testing.T) { sdktest.CaptureOutcomeWaitTooLong(t, sdk) }
func TestCapturedNext(t *testing.T)              { sdktest.CapturedNext(t, sdk) }
func TestNoKeyHeaderWhereNoneIsDocumented(t *testing.T) {
	sdktest.NoKeyHeaderWhereNoneIsDocumented(t, sdk)
}
func TestJobRunTwiceOneEffect(t *testing.T)       { sdktest.JobRunTwiceOneEffect(t, sdk) }
func TestOutageOneCallArrivals(t *testing.T)      { sdktest.OutageOneCallArrivals(t, sdk) }
func TestNeverSoonerThanRetryAfter(t *testing.T)  { sdktest.NeverSoonerThanRetryAfter(t, sdk) }
func TestOutageFleetAmplification(t *testing.T)   { sdktest.OutageFleetAmplification(t, sdk) }
func TestWorkerKilledAfterTheEffect(t *testing.T) { sdktest.WorkerKilledAfterTheEffect(t, sdk) }
func TestSDKWorkerChild(t *testing.T)             { sdktest.WorkerChild(t, sdk) }

// TestUncertainPOSTNeverResent: a 500 to a chat completion (OpenAI
// honours no key, so the POST may have been billed) is declared uncertain
// by the Transport; openai-go at its defaults re-sends it twice with
// X-Stainless-Retry-Count, and neither re-send reaches the provider.
func TestUncertainPOSTNeverResent(t *testing.T) {
	p := sdktest.Start(t, sdk)
	p.Fail(func(*http.Request) *fakes.Reply { return &fakes.Reply{Status: 500, AfterEffect: true} })
	tr := sdktest.NewTransport(sdk, p, retrybudget.Config{})
	ctx, out := retrybudget.CaptureOutcome(context.Background())
	if err := call(ctx, p.URL(), tr, true); err == nil {
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
