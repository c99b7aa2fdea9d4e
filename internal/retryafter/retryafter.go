// Package retryafter is the one Retry-After parser (RFC 9110 §10.2.3) and
// its one cap, for the DefaultClassifier (package retrybudget), the presets
// and package rateheader, whose ParseRetryAfter adds decimal seconds.
package retryafter

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Max bounds a Retry-After wait, so that the conversion to a time.Duration
// cannot overflow: a century. A value above it is absurd for a retry hint
// and is treated as absent rather than clamped, because clamping would turn
// garbage into an instruction.
const Max = 100 * 365 * 24 * time.Hour

// maxSeconds is Max in delta-seconds.
const maxSeconds = int64(Max / time.Second)

// Parse parses a Retry-After field value (RFC 9110 §10.2.3) and
// returns the absolute time before which the client should not retry.
//
// Both forms are accepted: delta-seconds (a non-negative decimal integer,
// added to now) and HTTP-date in any of the three formats a recipient must
// accept (RFC 9110 §5.6.7: IMF-fixdate, the obsolete RFC 850 form and ANSI C
// asctime). Surrounding whitespace is ignored.
//
// Negative, fractional, empty, garbage or overflowing values are treated as
// absent: ok is false and the time is zero. A date in the past is valid and
// returned as is; callers compare it with now. Parse never panics.
func Parse(value string, now time.Time) (at time.Time, ok bool) {
	v := strings.TrimSpace(value)
	if v == "" {
		return time.Time{}, false
	}
	if isDigits(v) {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil || secs > maxSeconds {
			return time.Time{}, false
		}
		return now.Add(time.Duration(secs) * time.Second), true
	}
	// http.ParseTime tries IMF-fixdate, RFC 850 and asctime in that order,
	// exactly the set RFC 9110 §5.6.7 requires a recipient to accept.
	t, err := http.ParseTime(v)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}

// isDigits reports whether s is a non-empty run of ASCII digits. A sign, a
// decimal point or an exponent makes the value invalid delta-seconds.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
