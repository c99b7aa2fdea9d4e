// Package integrations builds the providers' own Go clients on a
// retrybudget Transport, with the SDK's own retries off so that the
// Transport alone decides what is repeated: stripe-go
// (github.com/stripe/stripe-go/v85), openai-go (github.com/openai/openai-go/v3),
// go-openai (github.com/sashabaranov/go-openai), go-github
// (github.com/google/go-github/v84), slack-go (github.com/slack-go/slack),
// twilio-go (github.com/twilio/twilio-go) and plutov/paypal
// (github.com/plutov/paypal/v4).
//
// Each builder takes the Transport (any http.RoundTripper) and a base URL:
// the provider's for production, a local server's in tests, where the
// matching preset is pointed with Route.At (presets.Stripe().At(url)).
// The SDKs are heavy dependencies, so this package is a module of its own.
//
// At an SDK's default retry settings the Transport stays safe (an SDK's
// re-send of a call it gave up on is answered from the give-up, not sent),
// but the SDK still sleeps between those re-sends; these builders turn them
// off. Package fakes holds local fakes of the providers for tests.
package integrations
