package integrations

import (
	"net/http"

	"github.com/stripe/stripe-go/v85"
)

// Stripe returns a stripe-go client for key that sends through rt to
// baseURL (stripe.APIURL in production) with stripe-go's retries off
// (MaxNetworkRetries 0; its default is 2) and its logging silenced.
//
// stripe-go puts a random Idempotency-Key on every POST; under an Action
// the Transport replaces it with the Action's key, so a re-submitted action
// reaches Stripe under the key of its first submission.
func Stripe(key, baseURL string, rt http.RoundTripper) *stripe.Client {
	cfg := &stripe.BackendConfig{
		HTTPClient:        &http.Client{Transport: rt},
		MaxNetworkRetries: stripe.Int64(0),
		URL:               stripe.String(baseURL),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	}
	return stripe.NewClient(key, stripe.WithBackends(stripe.NewBackendsWithConfig(cfg)))
}
