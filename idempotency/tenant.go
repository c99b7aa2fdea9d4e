package idempotency

import (
	"fmt"
	"net/http"
	"net/textproto"

	"github.com/retrybudget/retrybudget/internal/keyedhash"
)

// CredentialTenant returns a Config.Tenant for a service without accounts:
// the tenant is "cred:" and 128 bits of the HMAC-SHA256, under secret, of
// the first of headers the request carries (Authorization, X-Api-Key, or a
// header an authenticating proxy sets); "" when it carries none, which the
// middleware refuses. Cookies are not credentials here: name the header
// your authentication sets from the session instead.
//
// The secret is a per-deployment secret of at least 16 bytes, the same on
// every instance (the tenant is part of the stored key). Keyed, the tenant
// stored in the ledger, or logged, cannot be reversed to a low-entropy
// credential by guessing, as an unkeyed hash could. A retry sent after the
// caller rotated its credential is a new action. It returns an error
// wrapping ErrInvalidConfig for a short secret or no header names.
func CredentialTenant(secret []byte, headers ...string) (func(*http.Request) string, error) {
	h, err := keyedhash.New(secret)
	if err != nil {
		return nil, fmt.Errorf("%w: CredentialTenant: secret is %d bytes: pass 32 random bytes, at least 16, the same on every instance: %w", ErrInvalidConfig, len(secret), err)
	}
	if len(headers) == 0 {
		return nil, fmt.Errorf("%w: CredentialTenant: no header names: pass the headers that carry the credential, such as CredentialTenant(secret, \"X-Api-Key\", \"Authorization\")", ErrInvalidConfig)
	}
	names := make([]string, len(headers))
	for i, n := range headers {
		names[i] = textproto.CanonicalMIMEHeaderKey(n)
	}
	return func(r *http.Request) string {
		for _, n := range names {
			if v := r.Header.Get(n); v != "" {
				return "cred:" + h.Sum("idempotency-tenant", n+"\x00"+v, 32)
			}
		}
		return ""
	}, nil
}
