package presets

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
)

// headerScope returns a Config.ActionScope that scopes a request's Action
// by the values of the named headers, the ones a provider reads to act
// for another account under the same credential: the same Action sent for
// two accounts is then two actions. Each header is written as its name,
// then its value length-prefixed, so that no two sets of values run into
// one scope. A request without any of them is not scoped. With hashed, the
// scope is a SHA-256 of that instead, for a header whose value may name a
// person (an email in PayPal's auth assertion), since the scope is stored
// in the action's ledger record.
func headerScope(hashed bool, names ...string) func(*http.Request) string {
	return func(r *http.Request) string {
		var b strings.Builder
		for _, n := range names {
			v := r.Header.Get(n)
			if v == "" {
				continue
			}
			b.WriteString(strings.ToLower(n))
			b.WriteByte('=')
			b.WriteString(strconv.Itoa(len(v)))
			b.WriteByte(':')
			b.WriteString(v)
			b.WriteByte(';')
		}
		if !hashed || b.Len() == 0 {
			return b.String()
		}
		sum := sha256.Sum256([]byte(b.String()))
		return "sha256:" + hex.EncodeToString(sum[:])
	}
}

// hostScope scopes a request's Action by its URL host, lower-cased and
// without its port: for a provider whose host names the account (a
// Shopify store), since the ledger's fingerprint leaves the host out.
func hostScope(r *http.Request) string {
	return strings.ToLower(r.URL.Hostname())
}
