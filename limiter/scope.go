package limiter

import "strings"

// scopeSeparator ends a boundary's scope: the scope of a boundary is the
// text before its first '|'. Hosts (RFC 3986 §3.2.2 reg-name) and the hex
// hashes of [ByCredential] never contain it, so a boundary built by this
// package is within no scope unless [Within] made it so.
const scopeSeparator = "|"

// Within returns the boundary name within scope: a boundary with limits of
// its own, which a cooldown of scope (Limiter.Cooldown with scope as the
// boundary) pauses as well, for a provider that keeps separate limits per
// resource under one credential but pauses the whole credential for some
// answers (GitHub's secondary rate limits are shared by every resource of
// a credential). The result is scope + "|" + name; any boundary of that
// form is within scope, with the scope ending at its first '|'.
//
// Both limiters check a boundary's own cooldown and its scope's in the
// same step: [Local] under one lock, [Redis] in the same script run (a
// cluster keeps every key of a scope on one slot, named by the scope's
// hash tag). Scopes do not nest: the scope of Within(Within(a, b), c) is a.
func Within(scope, name string) string {
	return scope + scopeSeparator + name
}

// Scope returns the scope boundary is within (see [Within]), or boundary
// itself when it is within none: the boundary to pause for a limit the
// provider keeps across the whole scope.
func Scope(boundary string) string {
	scope, _ := scopeOf(boundary)
	return scope
}

// scopeOf returns the scope boundary is within and true, or boundary
// itself and false when it is within none.
func scopeOf(boundary string) (string, bool) {
	if i := strings.Index(boundary, scopeSeparator); i >= 0 {
		return boundary[:i], true
	}
	return boundary, false
}
