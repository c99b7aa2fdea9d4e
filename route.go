package retrybudget

import (
	"net/http"
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

// route is a Route with its own Transport.
type route struct {
	host   string // lower case, without "*."
	suffix bool   // host came with "*."
	prefix string
	t      *Transport
}

// newRoutes builds a Transport per Route, and one more per auxiliary path,
// on clk, each inheriting what the Route leaves zero from parent (see
// Route.Config). parent has its defaults applied.
func newRoutes(parent Config, clk clock) []route {
	rs := make([]route, 0, len(parent.Routes))
	for _, r := range parent.Routes {
		cfg := inherit(r.Config, parent).withDefaults(clk)
		name := r.Name
		if name == "" {
			name = r.Host + r.PathPrefix
		}
		host := strings.ToLower(r.Host)
		suffix := strings.HasPrefix(host, "*.")
		host = strings.TrimPrefix(host, "*")
		rs = append(rs, route{host: host, suffix: suffix, prefix: r.PathPrefix,
			t: &Transport{cfg: cfg, clock: clk, route: name, noAction: r.NoAction}})
		for _, p := range r.Auxiliary {
			rs = append(rs, route{host: host, suffix: suffix, prefix: p,
				t: &Transport{cfg: cfg, clock: clk, route: name, noAction: true}})
		}
	}
	return rs
}

// inherit fills the fields of a route's cfg that a route shares with its
// parent when left zero.
func inherit(cfg, parent Config) Config {
	cfg.Routes = nil
	if cfg.Base == nil {
		cfg.Base = parent.Base
	}
	if cfg.Observer.isZero() {
		cfg.Observer = parent.Observer
	}
	led, pled := &cfg.Ledger, parent.Ledger
	if led.Store == nil {
		led.Store = pled.Store
	}
	if led.Headers == nil {
		led.Headers = pled.Headers
	}
	if led.Owner == "" {
		led.Owner = pled.Owner
	}
	if led.Lease == 0 {
		led.Lease = pled.Lease
	}
	if led.Reconciler == nil {
		led.Reconciler = pled.Reconciler
	}
	if cfg.Limiter == nil {
		cfg.Limiter = parent.Limiter
	}
	if cfg.Boundary == nil {
		cfg.Boundary = parent.Boundary
	}
	if cfg.Budget == nil {
		cfg.Budget = parent.Budget
	}
	if cfg.Throttle == nil {
		cfg.Throttle = parent.Throttle
	}
	if cfg.Overload == nil {
		cfg.Overload = parent.Overload
	}
	return cfg
}

// match returns the Transport of the Route that req matches, or nil.
func match(rs []route, req *http.Request) *Transport {
	var best *route
	for i := range rs {
		r := &rs[i]
		if r.matchesHost(req.URL.Host) && pathHasPrefix(req.URL.Path, r.prefix) &&
			(best == nil || len(r.prefix) > len(best.prefix)) {
			best = r
		}
	}
	if best == nil {
		return nil
	}
	return best.t
}

// matchesHost reports whether hostport (a URL host, perhaps with a port)
// is the route's host.
func (r *route) matchesHost(hostport string) bool {
	if r.suffix {
		h := strings.ToLower(hostname(hostport))
		return len(h) > len(r.host) && strings.HasSuffix(h, r.host)
	}
	return strings.EqualFold(hostport, r.host) || strings.EqualFold(hostname(hostport), r.host)
}

// hostname strips the port from a URL host.
func hostname(hostport string) string {
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 && !strings.Contains(hostport[i:], "]") {
		return strings.TrimSuffix(strings.TrimPrefix(hostport[:i], "["), "]")
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}
