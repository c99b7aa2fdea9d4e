package presets

import (
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/limiter"
)

// PayPal returns the policy for the PayPal REST API in production
// (api-m.paypal.com). For the sandbox, set Host to
// "api-m.sandbox.paypal.com" on the returned copy.
//
// Source: https://developer.paypal.com/api/rest/reference/idempotency/.
//
//   - Key: PayPal-Request-Id, honoured. PayPal returns the latest status of
//     the earlier request with the same id instead of repeating it, and
//     says idempotent calls that fail with network timeouts or 5xx may be
//     retried for as long as the server stores the id. Not every PayPal API
//     supports the header (each API's reference says whether it does and
//     for how long the id is kept): for an API that does not, set
//     KeysHonoured to false on a Route of its own (PathPrefix).
//   - Two requests sent at once with the same id may see the second fail;
//     the Transport sends the attempts of one call one after another.
//   - Statuses follow retrybudget.DefaultClassifier; PayPal documents no
//     retry or rate-limit header of its own.
//   - Three attempts, 1s doubling up to 10s (our choice).
//   - Boundary: the host and a hash of the Authorization header (the
//     OAuth access token of the app).
//   - Auxiliary: /v1/oauth2/token, where SDKs such as plutov/paypal fetch
//     the access token with the caller's context, carries no Action: it
//     takes neither the action's key nor its ledger record.
func PayPal() retrybudget.Route {
	return retrybudget.Route{
		Name:      "paypal",
		Host:      "api-m.paypal.com",
		Auxiliary: []string{"/v1/oauth2/token"},
		Config: retrybudget.Config{
			KeyHeader:    "PayPal-Request-Id",
			KeysHonoured: true,
			MaxAttempts:  3,
			BaseDelay:    time.Second,
			MaxDelay:     10 * time.Second,
			Boundary:     limiter.ByCredential(),
		},
	}
}
