package retrybudget

import (
	"net/http"
	"time"

	"github.com/retrybudget/retrybudget/internal/retryafter"
)

// retryAfter returns the time before which resp's provider asked not to be
// called again, from its Retry-After header (RFC 9110 §10.2.3), and
// whether the header held a usable value. Both forms are honoured:
// delta-seconds and an HTTP-date in any of the three formats a recipient
// must accept (RFC 9110 §5.6.7). Values more than a century ahead, in
// either form, are absurd for a retry hint and count as absent, so a
// hostile server cannot park a worker (or a job queue) for years.
//
// The parser and its one cap live in internal/retryafter, shared with the
// presets and package rateheader; this is the Transport's use of it. How
// the Transport then waits (never sooner than asked, never longer than
// MaxWait or past the deadline) is the wait plan in budget.go.
func retryAfter(resp *http.Response, now time.Time) (time.Time, bool) {
	return retryafter.Parse(resp.Header.Get("Retry-After"), now)
}
