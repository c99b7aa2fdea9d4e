package retrybudget

import (
	"maps"
	"net/http"
)

// keySource tells where a request's idempotency key came from.
type keySource int

const (
	keyNone      keySource = iota // no key: an idempotent method without an action
	keyCaller                     // the caller set the header itself
	keyAction                     // derived from the Action in the context
	keyGenerated                  // a random UUID for this call only
)

// resolveKey decides the idempotency key of one call whose key header
// holds callerKey (empty when none), under action when hasAction. An
// action's derived key comes first, replacing any key already in the header
// (an SDK such as stripe-go puts a random one on every POST, which would make
// a re-submitted action a new one at the provider); replaced is that header
// key, else empty. Without an action, a key the caller set is kept as is;
// else, for a method that is not idempotent, one random key shared by every
// attempt of the call. The caller leaves hasAction false to ignore the
// context's Action (an auxiliary call, such as an SDK fetching its OAuth
// token with the caller's context).
func resolveKey(keys *keyMint, method, callerKey string, action Action, hasAction bool) (key string, src keySource, replaced string, err error) {
	if hasAction {
		if action.Key == "" {
			return "", keyNone, "", ErrInvalidAction
		}
		key = action.IdempotencyKey()
		if callerKey != key {
			replaced = callerKey
		}
		return key, keyAction, replaced, nil
	}
	if callerKey != "" {
		return callerKey, keyCaller, "", nil
	}
	if isIdempotent(method) {
		return "", keyNone, "", nil
	}
	return keys.key(), keyGenerated, "", nil
}

// keySent reports whether the Transport sends a key of its own, from src:
// an Action's or a generated one, unless OmitKey says the provider
// documents no key header and there is no key there to replace (replaced
// is empty). Then the Outcome names no key, since none was sent.
func keySent(omitKey bool, src keySource, replaced string) bool {
	return (src == keyAction || src == keyGenerated) && !(omitKey && replaced == "")
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
