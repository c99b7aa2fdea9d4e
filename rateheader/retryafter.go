package rateheader

import (
	"net/http"
	"strings"
	"time"

	"github.com/retrybudget/retrybudget"
)

// maxRetryAfter is the bound retrybudget.ParseRetryAfter puts on
// delta-seconds; decimal seconds get the same, so "100.0" and "100" are
// accepted alike.
const maxRetryAfter = 100 * 365 * 24 * time.Hour

// ParseRetryAfter reads the Retry-After field (RFC 9110 §10.2.3) like
// retrybudget.ParseRetryAfter, and also accepts decimal seconds such as
// "2.0", which RFC 9110 does not allow but Shopify sends on its 429
// answers and the OpenAI-style SDKs parse. A fraction is kept, not
// rounded away. Everything retrybudget.ParseRetryAfter refuses, other than
// decimals, is refused here too: ok is false. Only the first field line
// counts.
func ParseRetryAfter(h http.Header, now time.Time) (at time.Time, ok bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if strings.IndexByte(v, '.') >= 0 {
		d, ok := parseDecimal(v, time.Second, maxRetryAfter)
		if !ok {
			return time.Time{}, false
		}
		return now.Add(d), true
	}
	return retrybudget.ParseRetryAfter(v, now)
}
