package retrybudget

import (
	"net/http"
	"strings"
)

// route is a Route with its own policy.
type route struct {
	host   string // lower case, without "*."
	suffix bool   // host came with "*."
	prefix string
	p      *policy
}

// newRoutes builds a policy per Route, and one more per auxiliary path,
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
		// The Route's auxiliary paths share its hedging, as they share
		// its Config.
		hedge := newHedging(cfg.HedgeDelay, cfg.HedgePercentile, cfg.HedgeWrites)
		rs = append(rs, route{host: host, suffix: suffix, prefix: r.PathPrefix,
			p: &policy{cfg: cfg, clock: clk, routeName: name, noAction: r.NoAction,
				safeActions: r.ActionOnSafeMethods, hedge: hedge}})
		for _, p := range r.Auxiliary {
			rs = append(rs, route{host: host, suffix: suffix, prefix: p,
				p: &policy{cfg: cfg, clock: clk, routeName: name, noAction: true, hedge: hedge}})
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

// match returns the policy of the Route that req matches, or nil.
func match(rs []route, req *http.Request) *policy {
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
	return best.p
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
