package retrybudget

import (
	"net/url"
	"strings"
)

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
