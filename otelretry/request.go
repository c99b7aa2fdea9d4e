package otelretry

import (
	"net/http"
	"net/url"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// isDefaultMethod reports whether m is a method the HTTP semantic
// conventions know: those of RFC 9110 §9, PATCH (RFC 5789) and QUERY.
func isDefaultMethod(m string) bool {
	switch m {
	case http.MethodConnect, http.MethodDelete, http.MethodGet, http.MethodHead, http.MethodOptions,
		http.MethodPatch, http.MethodPost, http.MethodPut, http.MethodTrace, "QUERY":
		return true
	}
	return false
}

// method returns the request's method as recorded, and whether it is known.
// An empty Method means GET in net/http.
func (t *Telemetry) method(req *http.Request) (string, bool) {
	m := req.Method
	if m == "" {
		m = http.MethodGet
	}
	if (t.known == nil && isDefaultMethod(m)) || t.known[m] {
		return m, true
	}
	return "_OTHER", false
}

// metricAttrs returns the request attributes shared by the per-call metrics:
// the method and the host, both of bounded cardinality.
func (t *Telemetry) metricAttrs(req *http.Request, extra int) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 2+extra)
	if req == nil {
		return attrs
	}
	m, _ := t.method(req)
	attrs = append(attrs, semconv.HTTPRequestMethodKey.String(m))
	if req.URL != nil {
		attrs = append(attrs, semconv.ServerAddress(req.URL.Hostname()))
	}
	return attrs
}

// serverPort returns u's port, or its scheme's default.
func serverPort(u *url.URL) int {
	if p, err := strconv.Atoi(u.Port()); err == nil {
		return p
	}
	switch u.Scheme {
	case "https":
		return 443
	case "http":
		return 80
	}
	return 0
}

// fullURL returns u without userinfo, query string or fragment, and without
// path when omitPath is set. The semantic conventions ask to redact
// userinfo and sensitive query values; leaving the whole query out is
// simpler and safer, as any parameter may hold a token.
func fullURL(u *url.URL, omitPath bool) string {
	r := url.URL{Scheme: u.Scheme, Host: u.Host}
	if !omitPath {
		r.Path, r.RawPath = u.Path, u.RawPath
	}
	return r.String()
}
