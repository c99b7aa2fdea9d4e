package rateheader

import (
	"net/http"
	"strings"
	"time"

	"github.com/retrybudget/retrybudget/internal/retryafter"
)

// ParseRetryAfter reads the Retry-After field (RFC 9110 §10.2.3) as the
// Transport's DefaultClassifier does: delta-seconds or an HTTP-date, at
// most a century away. It also accepts decimal seconds such as "2.0",
// which RFC 9110 does not allow but Shopify sends on its 429 answers and
// the OpenAI-style SDKs parse, under the same cap; a fraction is kept, not
// rounded away. Everything else the classifier refuses is refused here
// too: ok is false. Only the first field line counts.
func ParseRetryAfter(h http.Header, now time.Time) (at time.Time, ok bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if strings.IndexByte(v, '.') >= 0 {
		d, ok := parseDecimal(v, time.Second, retryafter.Max)
		if !ok {
			return time.Time{}, false
		}
		return now.Add(d), true
	}
	return retryafter.Parse(v, now)
}
