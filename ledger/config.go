package ledger

import (
	"fmt"
	"time"
)

// DefaultLease is the lease a reservation gets when neither the request
// nor Config sets one.
const DefaultLease = 30 * time.Second

// DefaultRetention is how long a record lives when neither the request nor
// Config sets a retention.
const DefaultRetention = 24 * time.Hour

// DefaultMaxAttempts is the attempt history a record keeps when
// Config.MaxAttempts is zero.
const DefaultMaxAttempts = 32

// Config holds what both stores share. The zero value is ready to use.
type Config struct {
	// Lease is how long an owner holds an action before others may treat it
	// as dead; owners of long calls call Renew. Zero means DefaultLease.
	Lease time.Duration
	// Retention is how long a record lives, counted from its creation and
	// extended to cover a live lease. After it the record is dropped and the
	// same key runs as a new action. Zero means DefaultRetention.
	Retention time.Duration
	// MaxBody caps the response body kept in an Outcome, in bytes; a longer
	// body is kept only as its hash. Zero means DefaultMaxBody; negative
	// means keep only hashes.
	MaxBody int
	// MaxAttempts caps the attempt history kept per record: past it the
	// oldest entries are dropped, so a record that is retried for ever
	// stays bounded. Attempt.N keeps counting every attempt. Zero means
	// DefaultMaxAttempts; negative is treated as 1.
	MaxAttempts int
	// Headers names the response headers an Outcome keeps. Nil means
	// Content-Type, Content-Encoding, Content-Language, Location, ETag,
	// Last-Modified, Retry-After, Idempotency-Key, Request-Id and
	// X-Request-Id; an empty non-nil slice keeps none. Authorization,
	// Proxy-Authorization, Cookie and Set-Cookie are never kept, even if
	// named.
	Headers []string
}

// HistoryCap returns how many attempts a record keeps: Config.MaxAttempts
// with its default applied.
func (c Config) HistoryCap() int {
	switch {
	case c.MaxAttempts == 0:
		return DefaultMaxAttempts
	case c.MaxAttempts < 0:
		return 1
	}
	return c.MaxAttempts
}

func (c Config) maxBody() int {
	switch {
	case c.MaxBody == 0:
		return DefaultMaxBody
	case c.MaxBody < 0:
		return -1
	}
	return c.MaxBody
}

// durations returns the lease and retention for a request, applying
// defaults, and rejects negative values and leases a store cannot express
// in whole milliseconds.
func (c Config) durations(lease, retention time.Duration) (time.Duration, time.Duration, error) {
	if lease == 0 {
		lease = c.Lease
	}
	if lease == 0 {
		lease = DefaultLease
	}
	if retention == 0 {
		retention = c.Retention
	}
	if retention == 0 {
		retention = DefaultRetention
	}
	if lease < time.Millisecond || retention < time.Millisecond ||
		lease%time.Millisecond != 0 || retention%time.Millisecond != 0 {
		return 0, 0, fmt.Errorf("%w: lease %s and retention %s must be whole milliseconds, at least 1ms", ErrInvalid, lease, retention)
	}
	return lease, retention, nil
}
