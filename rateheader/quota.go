package rateheader

import "time"

// MaxReset bounds every reset and wait these parsers accept: a value that
// ends further than MaxReset from the response's arrival is treated as
// absent, not clamped, because clamping would turn garbage into an
// instruction. A day covers every documented quota window we know of
// (hourly primary limits, daily request quotas) while keeping a hostile or
// broken server from pausing a whole fleet for longer. The IETF draft
// leaves such thresholds to clients (draft-ietf-httpapi-ratelimit-headers
// §8.5.1).
const MaxReset = 24 * time.Hour

// Quota is what one response said about one quota: how many units are
// left and when the quota resets. The parsers only return a Quota whose
// Remaining was sent and valid.
type Quota struct {
	// Policy names the quota policy, as the IETF RateLimit field does
	// ("default"); empty for fields that name none.
	Policy string
	// Remaining is the quota left, in the policy's units (usually
	// requests). It is never negative.
	Remaining int64
	// Limit is the size of the quota; zero when the response did not say.
	Limit int64
	// Reset is when the quota is replenished; the zero time when the
	// response did not say. It may be in the past: a provider's clock or
	// a slow response can make it so.
	Reset time.Time
	// Window is the length of the quota's time window; zero when the
	// response did not say.
	Window time.Duration
}

// PauseUntil returns the time until which no request should count against
// the quota: Reset, when nothing is left and Reset is after now. A spent
// quota without a future reset gives no pause, because the response did
// not say how long to wait.
func (q Quota) PauseUntil(now time.Time) (time.Time, bool) {
	if q.Remaining > 0 || !q.Reset.After(now) {
		return time.Time{}, false
	}
	return q.Reset, true
}

// latestPause returns the latest PauseUntil among qs: when several quotas
// are spent, the one that resets last is the one that binds.
func latestPause(qs []Quota, now time.Time) (time.Time, bool) {
	var until time.Time
	for _, q := range qs {
		if at, ok := q.PauseUntil(now); ok && at.After(until) {
			until = at
		}
	}
	return until, !until.IsZero()
}
