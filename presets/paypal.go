package presets

import (
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/limiter"
)

// PayPal's request id retention per API, as PayPal's API reference
// documents it (read 2026-12-03): "PayPal stores the PayPal-Request-Id"
// for 6 hours on Orders v2 create, authorize and capture, 3 hours on
// Payment Method Tokens (vault), 72 hours on Subscriptions and 45 days on
// Payments v2. Past it, PayPal takes the id as new.
const (
	PayPalOrdersKeyRetention        = 6 * time.Hour
	PayPalVaultKeyRetention         = 3 * time.Hour
	PayPalSubscriptionsKeyRetention = 72 * time.Hour
	PayPalPaymentsKeyRetention      = 45 * 24 * time.Hour
)

// PayPal returns the policy for the PayPal REST API in production
// (api-m.paypal.com), for the paths PayPalRoutes does not name. For the
// sandbox, set Host to "api-m.sandbox.paypal.com" on the returned copy.
// Prefer PayPalRoutes, which gives each API its own key retention and
// marks the calls that take no key.
//
// Source: https://developer.paypal.com/api/rest/reference/idempotency/
// and the API reference of each API (read 2026-12-03).
//
//   - Key: PayPal-Request-Id, honoured. PayPal returns the latest status of
//     the earlier request with the same id instead of repeating it, and
//     says idempotent calls that fail with network timeouts or 5xx may be
//     retried for as long as the server stores the id. "Not all APIs
//     support this header": each API's reference says whether it does and
//     for how long the id is kept.
//   - KeyRetention: PayPalVaultKeyRetention (3 hours), the shortest window
//     PayPal documents (our choice for a path whose API is not named), so
//     the ledger never re-sends an action under an id PayPal may have
//     forgotten.
//   - Two requests sent at once with the same id may see the second fail;
//     the Transport sends the attempts of one call one after another.
//   - Statuses follow retrybudget.DefaultClassifier; PayPal documents no
//     retry or rate-limit header of its own.
//   - Three attempts, 1s doubling up to 10s (our choice).
//   - Boundary: the host and a hash of the Authorization header (the
//     OAuth access token of the app). PayPal meters per app: when several
//     workers fetch their own tokens for one app, set
//     limiter.Fixed("paypal:" + clientID) on the copies.
//   - ActionScope: a hash of PayPal-Auth-Assertion, with which a
//     platform acts for a merchant under its own token: one Action sent
//     for two merchants is two actions.
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
			KeyRetention: PayPalVaultKeyRetention,
			MaxAttempts:  3,
			BaseDelay:    time.Second,
			MaxDelay:     10 * time.Second,
			Boundary:     limiter.ByCredential(),
			ActionScope:  headerScope(true, "PayPal-Auth-Assertion"),
		},
	}
}

// PayPalRoutes returns the policy for the PayPal REST API in production
// (api-m.paypal.com) as one Route per API, each with PayPal's own rule for
// PayPal-Request-Id, and PayPal for every other path. Give them all to the
// Transport (Config.Routes); a field changed on one (Host for the sandbox,
// Limiter, Boundary) must be changed on each.
//
// Each Route is PayPal's policy, with these differences (PayPal's API
// reference, read 2026-12-03):
//
//   - /v2/checkout/orders (create, authorize, capture): the id is kept 6
//     hours (PayPalOrdersKeyRetention).
//   - /v2/checkout/orders/{id}/confirm-payment-source,
//     /v2/checkout/orders/{id}/track and .../trackers: PayPal's SDK sends
//     no PayPal-Request-Id, so none is sent (OmitKey) and none is
//     honoured: a call that may have been applied is not repeated
//     (ErrUncertain), and the ledger never re-sends it.
//   - /v3/vault/ (payment and setup tokens): 3 hours
//     (PayPalVaultKeyRetention).
//   - /v1/billing/subscriptions: 72 hours
//     (PayPalSubscriptionsKeyRetention); activate, suspend and cancel
//     (/v1/billing/subscriptions/{id}/activate, ...) take no id, as for
//     order confirm.
//   - /v2/payments/ (capture, void, reauthorize, refund): 45 days
//     (PayPalPaymentsKeyRetention).
func PayPalRoutes() []retrybudget.Route {
	kept := func(prefix string, retention time.Duration) retrybudget.Route {
		r := PayPal()
		r.PathPrefix, r.Auxiliary, r.Config.KeyRetention = prefix, nil, retention
		return r
	}
	ignored := func(prefix string) retrybudget.Route {
		r := PayPal()
		r.PathPrefix, r.Auxiliary = prefix, nil
		r.Config.KeysHonoured, r.Config.OmitKey, r.Config.KeyRetention = false, true, 0
		return r
	}
	return []retrybudget.Route{
		PayPal(),
		kept("/v2/checkout/orders", PayPalOrdersKeyRetention),
		ignored("/v2/checkout/orders/{id}/confirm-payment-source"),
		ignored("/v2/checkout/orders/{id}/track"),
		kept("/v3/vault/", PayPalVaultKeyRetention),
		kept("/v1/billing/subscriptions", PayPalSubscriptionsKeyRetention),
		ignored("/v1/billing/subscriptions/{id}/activate"),
		ignored("/v1/billing/subscriptions/{id}/suspend"),
		ignored("/v1/billing/subscriptions/{id}/cancel"),
		kept("/v2/payments/", PayPalPaymentsKeyRetention),
	}
}
