package integrations_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/google/go-github/v84/github"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/plutov/paypal/v4"
	goopenai "github.com/sashabaranov/go-openai"
	"github.com/slack-go/slack"
	"github.com/stripe/stripe-go/v85"
	twilioapi "github.com/twilio/twilio-go/rest/api/v2010"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/integrations"
	"github.com/retrybudget/retrybudget/integrations/fakes"
	"github.com/retrybudget/retrybudget/presets"
)

// sdk is one provider SDK under test: how to fake its provider, which
// preset applies, and how to make one effect call through it.
type sdk struct {
	name   string
	fake   func() *fakes.Provider
	preset func() retrybudget.Route
	// retries reports that the SDK retries on its own at its defaults.
	retries bool
	// honours reports that the provider deduplicates by a key header.
	honours bool
	// call makes one effect call (a charge, a completion, an issue, a
	// message, an order) through the SDK sending through rt to url: at
	// the SDK's default retry settings when defaults is set, else as the
	// integrations builder sets it up (retries off).
	call func(ctx context.Context, url string, rt http.RoundTripper, defaults bool) error
}

func sdks() []sdk {
	return []sdk{
		{name: "stripe-go", fake: fakes.Stripe, preset: presets.Stripe, retries: true, honours: true, call: stripeCall},
		{name: "openai-go", fake: fakes.OpenAI, preset: presets.OpenAI, retries: true, call: openaiCall},
		{name: "go-openai", fake: fakes.OpenAI, preset: presets.OpenAI, call: goOpenAICall},
		{name: "go-github", fake: fakes.GitHub, preset: presets.GitHub, call: githubCall},
		{name: "slack-go", fake: fakes.Slack, preset: presets.Slack, call: slackCall("xoxb-workspace-a")},
		{name: "twilio-go", fake: fakes.Twilio, preset: presets.Twilio, call: twilioCall},
		{name: "paypal", fake: fakes.PayPal, preset: presets.PayPal, honours: true, call: paypalCall},
	}
}

func stripeCall(ctx context.Context, url string, rt http.RoundTripper, defaults bool) error {
	sc := integrations.Stripe("sk_test_123", url, rt)
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

func openaiCall(ctx context.Context, url string, rt http.RoundTripper, defaults bool) error {
	c := integrations.OpenAI("sk-test", url+"/v1/", rt)
	if defaults {
		c = openai.NewClient(option.WithAPIKey("sk-test"), option.WithBaseURL(url+"/v1/"),
			option.WithHTTPClient(&http.Client{Transport: rt}))
	}
	_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini", // the fake provider reads no model; a literal stays valid when the SDK retires a name
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	return err
}

func goOpenAICall(ctx context.Context, url string, rt http.RoundTripper, _ bool) error {
	c := integrations.GoOpenAI("sk-test", url+"/v1", rt)
	_, err := c.CreateChatCompletion(ctx, goopenai.ChatCompletionRequest{
		Model:    goopenai.GPT4oMini,
		Messages: []goopenai.ChatCompletionMessage{{Role: goopenai.ChatMessageRoleUser, Content: "hi"}},
	})
	return err
}

func githubCall(ctx context.Context, url string, rt http.RoundTripper, _ bool) error {
	c, err := integrations.GitHub("ghp_test", url, rt)
	if err != nil {
		return err
	}
	_, _, err = c.Issues.Create(ctx, "o", "r", &github.IssueRequest{Title: github.Ptr("t")})
	return err
}

func slackCall(token string) func(context.Context, string, http.RoundTripper, bool) error {
	return func(ctx context.Context, url string, rt http.RoundTripper, _ bool) error {
		c := integrations.Slack(token, url+"/api/", rt)
		_, _, err := c.PostMessageContext(ctx, "C1", slack.MsgOptionText("hi", false))
		return err
	}
}

func twilioCall(ctx context.Context, url string, rt http.RoundTripper, _ bool) error {
	tc, err := integrations.Twilio(ctx, "AC123", "token123", url, rt)
	if err != nil {
		return err
	}
	_, err = tc.Api.CreateMessage((&twilioapi.CreateMessageParams{}).SetTo("+15550001").SetFrom("+15550002").SetBody("hi"))
	return err
}

// paypalClients caches one plutov/paypal client per fake and Transport,
// as an application keeps one (it caches its access token).
var paypalClients sync.Map // paypalClientKey → func(context.Context) error

type paypalClientKey struct {
	url string
	rt  http.RoundTripper
}

func paypalCall(ctx context.Context, url string, rt http.RoundTripper, _ bool) error {
	k := paypalClientKey{url, rt}
	v, ok := paypalClients.Load(k)
	if !ok {
		c, err := newPayPal(url, rt)
		if err != nil {
			return err
		}
		v, _ = paypalClients.LoadOrStore(k, c)
	}
	return v.(func(context.Context) error)(ctx)
}

// newPayPal returns a function creating one order through one
// plutov/paypal client.
func newPayPal(url string, rt http.RoundTripper) (func(context.Context) error, error) {
	c, err := integrations.PayPal("client", "secret", url, rt)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		_, err := c.CreateOrder(ctx, paypal.OrderIntentCapture,
			[]paypal.PurchaseUnitRequest{{Amount: &paypal.PurchaseUnitAmount{Currency: "USD", Value: "1.00"}}}, nil, nil)
		return err
	}, nil
}

// newTransport returns a Transport whose only Route is s's preset pointed
// at p.
func newTransport(s sdk, p *fakes.Provider, cfg retrybudget.Config) *retrybudget.Transport {
	cfg.Routes = []retrybudget.Route{s.preset().At(p.URL())}
	return retrybudget.New(cfg)
}

// start starts s's fake, closed at the end of the test.
func start(t *testing.T, s sdk) *fakes.Provider {
	p := s.fake()
	t.Cleanup(p.Close)
	return p
}
