package retrybudget

import (
	"net/http"
	"strings"
)

// Route gives the requests to one destination a policy of their own:
// classifier, key header, backoff, attempts, budget, limiter and boundary.
// Requests that match no Route use the Transport's own Config.
type Route struct {
	// Host is the destination host, compared case-insensitively with the
	// request URL's host, with or without its port: "api.stripe.com",
	// "localhost:8080". A leading "*." matches any subdomain:
	// "*.example.com" matches "api.example.com" but not "example.com".
	Host string
	// PathPrefix, when set, narrows the Route to URL paths that start with
	// it. Among matching Routes the longest PathPrefix wins; on a tie, the
	// first.
	PathPrefix string
	// Config is the route's policy. Its zero fields take the documented
	// defaults, except Base and Observer, which, left zero, are the
	// Transport's. Its Routes are ignored.
	Config Config
}

// route is a Route with its own Transport.
type route struct {
	host   string // lower case, without "*."
	suffix bool   // host came with "*."
	prefix string
	t      *Transport
}

// newRoutes builds a Transport per Route, on clk, inheriting parent's Base
// and Observer where the Route leaves them zero.
func newRoutes(parent Config, clk clock) []route {
	rs := make([]route, 0, len(parent.Routes))
	for _, r := range parent.Routes {
		cfg := r.Config
		cfg.Routes = nil
		if cfg.Base == nil {
			cfg.Base = parent.Base
		}
		if cfg.Observer.isZero() {
			cfg.Observer = parent.Observer
		}
		host := strings.ToLower(r.Host)
		suffix := strings.HasPrefix(host, "*.")
		rs = append(rs, route{host: strings.TrimPrefix(host, "*"), suffix: suffix, prefix: r.PathPrefix,
			t: &Transport{cfg: cfg.withDefaults(clk), clock: clk}})
	}
	return rs
}

// match returns the Transport of the Route that req matches, or nil.
func match(rs []route, req *http.Request) *Transport {
	var best *route
	for i := range rs {
		r := &rs[i]
		if r.matchesHost(req.URL.Host) && strings.HasPrefix(req.URL.Path, r.prefix) &&
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
