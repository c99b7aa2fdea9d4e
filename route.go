package retrybudget

import (
	"net/url"
	"strings"
)

// Route gives the requests to one destination a policy of their own:
// classifier, key header, backoff, attempts, budget, limiter and boundary.
// Requests that match no Route use the Transport's own Config.
type Route struct {
	// Name names the Route in the Outcome and in every Observer event.
	// Empty means Host followed by PathPrefix.
	Name string
	// Host is the destination host, compared case-insensitively with the
	// request URL's host, with or without its port: "api.stripe.com",
	// "localhost:8080". A leading "*." matches any subdomain:
	// "*.example.com" matches "api.example.com" but not "example.com".
	Host string
	// PathPrefix, when set, narrows the Route to URL paths that start with
	// it. A segment written as a name in braces stands for any one
	// segment, as in net/http's ServeMux patterns:
	// "/v2/checkout/orders/{id}/capture". Among matching Routes the
	// longest PathPrefix wins; on a tie, the first.
	PathPrefix string
	// NoAction makes the Route's requests carry no Action: no action key
	// and no ledger record, whatever the context holds. It suits auxiliary
	// calls, such as an SDK fetching an OAuth token with the caller's
	// context.
	NoAction bool
	// ActionOnSafeMethods makes the Route's GET, HEAD, OPTIONS and TRACE
	// requests carry the context's Action like any other method: keyed,
	// ledgered, held, refused and replayed, for a provider whose safe
	// method has an effect. False, the default, sends a safe method to the
	// provider each time, unkeyed and outside the ledger, under an Action
	// or not (RFC 9110 §9.2.1: a safe method is read-only, so there is no
	// effect to deduplicate, and a stored answer would be stale).
	ActionOnSafeMethods bool
	// Auxiliary lists path prefixes of the provider's auxiliary calls
	// (auth and token endpoints, such as PayPal's /v1/oauth2/token) under
	// Host: they follow the Route's policy but carry no Action, as with
	// NoAction.
	Auxiliary []string
	// Config is the route's policy. Its zero fields take the documented
	// defaults, except these, which, left zero, are the Transport's: Base,
	// Observer, the Ledger's fields (Store, Headers, Owner, Lease,
	// Reconciler), Limiter, Boundary, Budget, Throttle and Overload. Its Routes are
	// ignored.
	Config Config
}

// At returns a copy of r that matches the server at rawURL instead of the
// provider's host, so that a preset can be tested against a local server and
// behave there as against the provider: presets.Stripe().At(srv.URL).
// rawURL is a URL ("http://127.0.0.1:8080", with an optional path under
// which the server mounts the provider's API) or a bare "host:port". The
// Route keeps its Name (the provider's, for a preset), its policy, and its
// path prefixes, which move under rawURL's path.
func (r Route) At(rawURL string) Route {
	host, base := rawURL, ""
	if u, err := url.Parse(rawURL); err == nil && u.Host != "" {
		host, base = u.Host, strings.TrimSuffix(u.EscapedPath(), "/")
	}
	if r.Name == "" {
		r.Name = r.Host + r.PathPrefix
	}
	r.Host = host
	if base != "" {
		r.PathPrefix = base + r.PathPrefix
		aux := make([]string, len(r.Auxiliary))
		for i, p := range r.Auxiliary {
			aux[i] = base + p
		}
		r.Auxiliary = aux
	}
	return r
}
