// Package presets holds retrybudget policies for well-known providers,
// each built from the provider's public documentation: the key header and
// whether the provider deduplicates by it and for how long it keeps it
// (Config.KeyRetention), the provider's own retry
// signals (Stripe-Should-Retry, x-should-retry), its rate-limit fields and
// what a refusal means, and backoff settings that suit its limits.
//
// Each preset is a function returning a fresh retrybudget.Route, so a
// caller may change any field of the copy it gets:
//
//	r := presets.Stripe()
//	r.Config.Limiter = lim // share the provider's limit across the fleet
//	client := &http.Client{Transport: retrybudget.New(retrybudget.Config{
//		Routes: []retrybudget.Route{r},
//	})}
//
// Where a provider's rules differ by API (whether a path takes the key, how
// long the provider keeps it), the preset also comes as one Route per API:
// PayPalRoutes, TwilioRoutes. Pass them all to the Transport.
//
// No preset sets Config.SettleTime, how long after a send the provider may
// still apply it: none of these providers documents its processing time,
// so each keeps the default, the ledger lease. Set it on the copy where a
// provider's documentation gives a bound.
//
// A preset sets Config.Boundary to the provider's metering unit (usually
// the credential; the account, project or installation where the request
// names it, or through a helper such as GitHubBoundary), but no Limiter: the pauses a preset asks for (from
// Retry-After on a refusal, or from a rate-limit field saying the quota is
// spent) reach the fleet only through the Limiter the caller sets.
//
// Rules marked "our choice" in the documentation of each preset are
// conservative defaults of this package where the provider documents no
// figure; everything else cites the provider's page. ByName and Names give
// the presets to tools such as a planner CLI (--preset stripe). The
// package README (presets/README.md) tabulates them.
//
//snippet:needs app
package presets
