// Package integrations holds what the SDK integrations share: Bind, for
// SDKs whose calls take no context. Each provider SDK has a package and a
// module of its own, which builds the SDK's client on a retrybudget
// Transport with the SDK's own retries off, so that the Transport alone
// decides what is repeated, and a program compiles only the SDK it uses:
//
//   - github.com/retrybudget/retrybudget/integrations/stripe: stripe-go
//   - github.com/retrybudget/retrybudget/integrations/openai: openai-go
//   - github.com/retrybudget/retrybudget/integrations/goopenai: go-openai (sashabaranov)
//   - github.com/retrybudget/retrybudget/integrations/github: go-github
//   - github.com/retrybudget/retrybudget/integrations/slack: slack-go
//   - github.com/retrybudget/retrybudget/integrations/twilio: twilio-go
//   - github.com/retrybudget/retrybudget/integrations/paypal: plutov/paypal
//
// Each builder takes the Transport (any http.RoundTripper) and a base URL:
// the provider's for production, a local server's in tests, where the
// matching preset is pointed with Route.At (presets.Stripe().At(url)).
//
// At an SDK's default retry settings the Transport stays safe (an SDK's
// re-send of a call it gave up on is answered from the give-up, not sent),
// but the SDK still sleeps between those re-sends; the builders turn them
// off. Package fakes holds local fakes of the providers for tests; it and
// this package need only the standard library.
package integrations
