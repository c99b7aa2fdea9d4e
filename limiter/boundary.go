package limiter

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/textproto"
	"strings"
)

// Boundary maps a request to the key of the provider limit it counts
// against: usually the provider's host plus the account or credential the
// provider meters. Returned keys never contain raw credentials, since they
// end up in Redis (hashed once more) and may be logged.
//
// A Boundary must not modify the request.
type Boundary func(*http.Request) string

// credentialDomain separates credential hashes from any other SHA-256 use,
// so a boundary key cannot be matched against a hash of the same secret
// published elsewhere.
const credentialDomain = "retrybudget/limiter/credential/v1"

// ByCredential returns a Boundary keyed by the request's host and a
// SHA-256 hash of its Authorization header, so that each API key or token
// gets its own limit, as most payment and SaaS providers meter them.
// Requests without an Authorization header share the host's boundary.
func ByCredential() Boundary {
	return ByHeader("Authorization")
}

// ByHeader returns a Boundary keyed by the request's host and a SHA-256
// hash of the named header (for providers that take an API key in a header
// such as X-Api-Key). Requests without the header share the host's
// boundary.
func ByHeader(name string) Boundary {
	canonical := textproto.CanonicalMIMEHeaderKey(name)
	return func(r *http.Request) string {
		host := requestHost(r)
		values := r.Header.Values(canonical)
		if len(values) == 0 {
			return host
		}
		return host + "#" + hashCredential(canonical, values)
	}
}

// Fixed returns a Boundary that maps every request to account, for a
// client that only ever calls one provider account. The account is a name
// (for example "stripe-live"), not a secret: it is returned as given.
func Fixed(account string) Boundary {
	return func(*http.Request) string { return account }
}

// requestHost returns the lower-cased host the request is sent to. A
// RoundTripper sees URL.Host set; Host is the fallback for server-side
// requests.
func requestHost(r *http.Request) string {
	host := r.Host
	if r.URL != nil && r.URL.Host != "" {
		host = r.URL.Host
	}
	return strings.ToLower(host)
}

// hashCredential returns 128 bits of SHA-256 over the header name and its
// values, hex-encoded: enough to keep distinct credentials apart, and short
// enough for readable keys.
func hashCredential(name string, values []string) string {
	h := sha256.New()
	h.Write([]byte(credentialDomain))
	h.Write([]byte{0})
	h.Write([]byte(name))
	for _, v := range values {
		h.Write([]byte{0})
		h.Write([]byte(v))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
