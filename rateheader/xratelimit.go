package rateheader

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ResetMode says how an X-RateLimit-Reset value is read. Providers
// disagree: GitHub sends epoch seconds, others delta seconds, OpenAI a
// duration such as "6m0s".
type ResetMode int

const (
	// ResetAuto, the zero value, reads a duration with units ("6m0s",
	// "20ms") as ResetDuration, a number up to MaxReset in seconds (86400)
	// as delta seconds, and a larger number as epoch seconds. No provider
	// means an instant in 1970 by a small number, and a delta of more than
	// a day would be refused anyway, so the two readings cannot be
	// confused within the bound.
	ResetAuto ResetMode = iota
	// ResetDelta reads the number of seconds until the reset, decimals
	// allowed ("30", "1.5").
	ResetDelta
	// ResetEpoch reads the reset instant as seconds since the Unix epoch,
	// decimals allowed ("1735689600").
	ResetEpoch
	// ResetDuration reads a Go-style duration ("1s", "6m0s", "20ms"), as
	// OpenAI sends in x-ratelimit-reset-requests and
	// x-ratelimit-reset-tokens.
	ResetDuration
)

// maxCount bounds the limits and remaining counts accepted: 15 digits,
// the Structured Field Integer bound (RFC 9651 §3.3.1), far above any
// quota and well inside an int64.
const maxCount = 999_999_999_999_999

// XRateLimit names one family of X-RateLimit-style fields: Limit,
// Remaining and Reset, each between Prefix and Suffix. The zero value reads
// X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset with
// ResetAuto.
//
// These fields are a de facto convention, not a standard: each provider
// documents its own names and reset format, so choose Mode from the
// provider's documentation.
type XRateLimit struct {
	// Prefix starts each field name. Empty means "X-RateLimit-".
	Prefix string
	// Suffix ends each field name, as in OpenAI's
	// x-ratelimit-remaining-requests ("-Requests"). Empty means none.
	Suffix string
	// Mode says how the Reset field is read.
	Mode ResetMode
}

// Parse reads the family's fields from h, for a response that arrived at
// now. ok is false when the Remaining field is absent or malformed; a
// malformed Limit or Reset is left zero. A Remaining or Limit is a
// non-negative integer of at most 15 digits: a sign, a fraction or more
// digits make it malformed (Azure OpenAI's "-1" for "unknown" is refused,
// not read as spent). A Reset further than MaxReset from now is treated
// as absent. Field names are matched case-insensitively, and only the
// first line of each field counts.
func (x XRateLimit) Parse(h http.Header, now time.Time) (q Quota, ok bool) {
	prefix := x.Prefix
	if prefix == "" {
		prefix = "X-RateLimit-"
	}
	if q.Remaining, ok = parseCount(h.Get(prefix + "Remaining" + x.Suffix)); !ok {
		return Quota{}, false
	}
	q.Limit, _ = parseCount(h.Get(prefix + "Limit" + x.Suffix))
	q.Reset, _ = x.Mode.parse(h.Get(prefix+"Reset"+x.Suffix), now)
	return q, true
}

// parseCount parses a non-negative decimal integer of at most 15 digits.
func parseCount(v string) (int64, bool) {
	v = strings.TrimSpace(v)
	if v == "" || len(v) > 15 {
		return 0, false
	}
	for i := 0; i < len(v); i++ {
		if !isDigit(v[i]) {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil && n <= maxCount
}

// parse reads a reset value in mode m. ok is false for a malformed value
// or one that ends further than MaxReset from now.
func (m ResetMode) parse(v string, now time.Time) (time.Time, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, false
	}
	switch m {
	case ResetDelta:
		return parseDelta(v, now)
	case ResetEpoch:
		return parseEpoch(v, now)
	case ResetDuration:
		return parseDuration(v, now)
	default:
		if hasUnit(v) {
			return parseDuration(v, now)
		}
		if at, ok := parseDelta(v, now); ok {
			return at, true
		}
		return parseEpoch(v, now)
	}
}

// parseDelta reads decimal seconds from now.
func parseDelta(v string, now time.Time) (time.Time, bool) {
	d, ok := parseDecimal(v, time.Second, MaxReset)
	if !ok {
		return time.Time{}, false
	}
	return now.Add(d), true
}

// parseEpoch reads decimal seconds since the Unix epoch. An instant in the
// past is returned as is; one beyond now+MaxReset is refused.
func parseEpoch(v string, now time.Time) (time.Time, bool) {
	// Seconds since the epoch up to now+MaxReset; anything past that is
	// refused before it can overflow.
	bound := time.Duration(now.Add(MaxReset).Unix()+1) * time.Second
	if bound <= 0 {
		return time.Time{}, false
	}
	d, ok := parseDecimal(v, time.Second, bound)
	if !ok {
		return time.Time{}, false
	}
	at := time.Unix(0, 0).Add(d)
	if at.After(now.Add(MaxReset)) {
		return time.Time{}, false
	}
	return at, true
}

// parseDuration reads a Go-style duration ("6m0s", "20ms", "1.5s") from
// now. A sign is refused: a reset is never in the past by design, and
// time.ParseDuration would otherwise accept one.
func parseDuration(v string, now time.Time) (time.Time, bool) {
	if v[0] == '-' || v[0] == '+' {
		return time.Time{}, false
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > MaxReset {
		return time.Time{}, false
	}
	return now.Add(d), true
}

// hasUnit reports whether v contains a letter, as a duration with units
// does and a number never does.
func hasUnit(v string) bool {
	for i := 0; i < len(v); i++ {
		if isAlpha(v[i]) || v[i] >= 0x80 {
			return true
		}
	}
	return false
}
