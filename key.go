package retrybudget

import (
	"maps"
	"net/http"
)

// setKey puts the call's key in its own copy of the headers, and keeps the
// key it replaced for the Observer's AttemptEvent. The copy's key value is c.first.key, so
// setting it costs no allocation beyond the map; the call must have been
// made with first for this reason (see keySent).
func (c *call) setKey(key, replaced string) {
	c.first.key[0] = key
	c.header, c.headerCopied = withValue(c.req.Header, c.t.cfg.KeyHeader, c.first.key[:]), true
	c.first.replaced = replaced
}

// keySent reports whether the Transport sends a key of its own, from src:
// an Action's or a generated one, unless OmitKey says the provider
// documents no key header and there is no key there to replace (replaced
// is empty). Then the Outcome names no key, since none was sent.
func (t *Transport) keySent(src keySource, replaced string) bool {
	return (src == keyAction || src == keyGenerated) && !(t.cfg.OmitKey && replaced == "")
}

// withValue returns a copy of h (nil meaning empty) with vals under name,
// which must be in canonical form, for the attempts of one call: a map of
// its own, so that the caller's map is never touched, which shares h's
// value slices rather than copying them, as a RoundTripper may not modify
// the request it is given. maps.Clone copies a small map's memory whole,
// faster than a loop can fill a new one.
func withValue(h http.Header, name string, vals []string) http.Header {
	out := maps.Clone(h)
	if out == nil {
		out = make(http.Header, 1)
	}
	out[name] = vals
	return out
}

// headerValue is h.Get(name) for a name already in canonical form, without
// canonicalizing it again on every call.
func headerValue(h http.Header, name string) string {
	if v := h[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}
