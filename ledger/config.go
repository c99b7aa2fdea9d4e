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

// ExpiryGrace is how long Memory and Redis keep a record past its
// retention (Record.ExpiresAt) before dropping it. Such a record is gone for
// every purpose (Get answers ErrNotFound, Sweep skips it, Reserve creates a
// new one) except that Reserve reports the expiry (Reservation.Expired).
// ledger/lua/reserve.lua and renew.lua spell it in milliseconds.
const ExpiryGrace = time.Hour

// DefaultMaxAttempts is the attempt history a record keeps when
// Config.MaxAttempts is zero.
const DefaultMaxAttempts = 32

// Config holds what every store shares. A store shared between processes
// requires FingerprintKeys, a per-deployment secret: NewRedis and
// pgledger.New fail with ErrNoFingerprintKey without it. For NewMemory the
// zero value is ready to use. Every other zero field means the default its
// comment names.
type Config struct {
	// Lease is how long an owner holds an action before others may treat it
	// as dead; owners of long calls call Renew. Zero means DefaultLease.
	Lease time.Duration
	// Retention is how long a record lives, counted from its creation and
	// extended to one lease past the end of its last lease, so that an
	// owner that died holding it is seen as stuck, not as absent: the
	// record lives until the later of the two. After it the record is
	// dropped and the same key runs as a new action. Zero means
	// DefaultRetention.
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
	// FingerprintKeys seal the request fingerprints the store keeps (see
	// FingerprintKeys): the first seals, every one verifies. Required by
	// stores shared between processes (NewRedis returns
	// ErrNoFingerprintKey without one); nil in a Memory store means a
	// random key drawn when the store is created.
	FingerprintKeys FingerprintKeys
	// EncryptionKeys, when set, encrypt the response headers and body a
	// store shared between processes keeps (see EncryptionKeys). Nil
	// stores them in the clear. A Memory store, in process memory, does
	// not encrypt.
	EncryptionKeys EncryptionKeys
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

// SettleTime returns the settle time of a grant (ReserveRequest.Settle)
// made with lease: settle itself, or lease when settle is zero. It fails
// with ErrInvalid for a negative settle time and one a store cannot
// express in whole milliseconds.
func SettleTime(settle, lease time.Duration) (time.Duration, error) {
	if settle == 0 {
		return lease, nil
	}
	if settle < time.Millisecond || settle%time.Millisecond != 0 {
		return 0, fmt.Errorf("%w: settle time %s (ReserveRequest.Settle) must be whole milliseconds, at least 1ms, such as 2m; zero means the lease", ErrInvalid, settle)
	}
	return settle, nil
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
	if lease < time.Millisecond || lease%time.Millisecond != 0 {
		return 0, 0, fmt.Errorf("%w: lease %s (ReserveRequest.Lease, else Config.Lease) must be whole milliseconds, at least 1ms, such as %s; zero means the default", ErrInvalid, lease, DefaultLease)
	}
	if retention < time.Millisecond || retention%time.Millisecond != 0 {
		return 0, 0, fmt.Errorf("%w: retention %s (ReserveRequest.Retention, else Config.Retention) must be whole milliseconds, at least 1ms, such as 24h; zero means the default", ErrInvalid, retention)
	}
	return lease, retention, nil
}
