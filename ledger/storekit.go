package ledger

import "time"

// The exported helpers below let a Store implemented outside this package
// (such as the PostgreSQL store in ledger/pgledger) apply exactly the rules
// Memory and Redis apply, instead of a copy of them.

// Durations returns the lease and retention for a request, applying the
// Config's defaults, and fails with ErrInvalid for negative values and
// values that are not whole milliseconds.
func (c Config) Durations(lease, retention time.Duration) (time.Duration, time.Duration, error) {
	return c.durations(lease, retention)
}

// StoredOutcome returns the Outcome a store persists for o: headers
// filtered as Config.Headers says (credentials never kept), the body capped
// at Config.MaxBody and hashed.
func (c Config) StoredOutcome(o Outcome) *Outcome { return c.storedOutcome(o) }

// NewToken returns the first fencing token of a new record: a random
// value in the lower half of the 52-bit range, so that takeovers, which add
// one, stay exact as a Lua double and a stale owner of an expired
// incarnation cannot match the next one.
func NewToken() int64 { return newToken() }

// Validate returns ErrInvalid for a Key no store accepts: one with an
// empty Key.Key.
func (k Key) Validate() error { return k.validate() }

// NotOwner returns an error wrapping ErrNotOwner that names k by the start
// of its ID only, as every store's fenced calls do.
func NotOwner(k Key) error { return notOwner(k) }

// Stuck reports whether Sweep lists r at now: it is uncertain, or in
// progress with its lease over.
func (r Record) Stuck(now time.Time) bool { return r.stuck(now) }

// Reclaims reports whether req comes from another run of the owner that
// holds rec, an action in progress: the same non-empty Owner and another
// non-empty Instance, so the holder restarted (Input.Reclaim).
func (req ReserveRequest) Reclaims(rec Record) bool { return req.reclaims(&rec) }
