package rateheader

import (
	"net/http"
	"strings"
	"time"
)

// ParseRetryAfterMs reads the Retry-After-Ms field: the wait before a
// retry in milliseconds, a finer Retry-After sent by OpenAI-style APIs and
// honoured by their official SDKs, which prefer it over Retry-After. It
// is not an IETF field. The value is a non-negative decimal number
// ("250", "1500.5"); the result is now plus that wait.
//
// An absent, empty, negative, non-numeric or overflowing value, or a wait
// longer than MaxReset, is treated as absent: ok is false. Only the first
// field line counts.
func ParseRetryAfterMs(h http.Header, now time.Time) (at time.Time, ok bool) {
	d, ok := parseDecimal(strings.TrimSpace(h.Get("Retry-After-Ms")), time.Millisecond, MaxReset)
	if !ok {
		return time.Time{}, false
	}
	return now.Add(d), true
}
