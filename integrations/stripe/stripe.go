// Package stripe builds a stripe-go (github.com/stripe/stripe-go/v85)
// client on a retrybudget Transport, with stripe-go's own retries off so
// that the Transport alone decides what is repeated. It is a module of its
// own, so a program that uses it compiles stripe-go and no other SDK.
// Beside stripe-go, import it under a name of your own:
//
//	import stripe "github.com/stripe/stripe-go/v85"
//	import rbstripe "github.com/retrybudget/retrybudget/integrations/stripe"
//
//	tr := retrybudget.New(retrybudget.Config{Routes: []retrybudget.Route{presets.Stripe()}})
//	sc := rbstripe.NewClient(key, stripe.APIURL, tr)
//
//snippet:needs stripe, sdk
package stripe

import (
	"net/http"

	"github.com/stripe/stripe-go/v85"
)

// NewClient returns a stripe-go client for key that sends through rt to
// baseURL (stripe.APIURL in production; a local server's URL in tests,
// where presets.Stripe is pointed with Route.At) with stripe-go's retries
// off (MaxNetworkRetries 0; its default is 2) and its logging silenced.
//
// stripe-go puts a random Idempotency-Key on every POST; under an Action
// the Transport replaces it with the Action's key, so a re-submitted action
// reaches Stripe under the key of its first submission.
func NewClient(key, baseURL string, rt http.RoundTripper) *stripe.Client {
	cfg := &stripe.BackendConfig{
		HTTPClient:        &http.Client{Transport: rt},
		MaxNetworkRetries: stripe.Int64(0),
		URL:               stripe.String(baseURL),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	}
	return stripe.NewClient(key, stripe.WithBackends(stripe.NewBackendsWithConfig(cfg)))
}
