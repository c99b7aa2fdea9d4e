package app

import (
	"context"
	"net/http"
	"strings"
)

// demoTokens returns the demo's bearer tokens and their tenants. They are
// hard-coded for the demo only and grant nothing: a real service verifies
// a credential (a signed token, a hashed API key) instead; the idempotency
// middleware only needs the tenant it yields.
func demoTokens() map[string]string {
	return map[string]string{"token_a": "tenant_a", "token_b": "tenant_b"}
}

// demoOperatorTokens returns the demo's operator bearer tokens: the only
// credentials the /admin endpoints accept. A tenant's token never reads the
// ledger's records, its own included; a real service puts these routes
// behind its operators' single sign-on instead.
func demoOperatorTokens() map[string]string {
	return map[string]string{"token_ops": "operator"}
}

type tenantCtxKey struct{}

// authenticate answers 401 to a request without a bearer token listed in
// tokens (RFC 6750 §3) and puts the caller's tenant in the context of the
// others.
func authenticate(tokens map[string]string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		tenant, known := tokens[token]
		if !ok || !known {
			w.Header().Set("WWW-Authenticate", `Bearer realm="activation"`)
			writeProblem(w, http.StatusUnauthorized, typeUnauthorized, "Unauthorized",
				"Send Authorization: Bearer token_a (or token_b).", 0)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tenantCtxKey{}, tenant)))
	})
}

// tenantOf is the idempotency middleware's Config.Tenant: the tenant
// authenticate found.
func tenantOf(r *http.Request) string {
	t, _ := r.Context().Value(tenantCtxKey{}).(string)
	return t
}
