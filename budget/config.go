package budget

import (
	"log/slog"
	"time"
)

// Defaults of a RedisConfig's zero fields.
const (
	DefaultTimeout       = 50 * time.Millisecond
	DefaultProbeInterval = time.Second
	DefaultFlushInterval = time.Second
)

// RedisConfig configures a [Redis] budget. DestinationKey, a
// per-deployment secret, is required; every other zero field means its
// default: the default rule (10% of first attempts, or 10 retries per
// second, over 10s) shared under [DefaultPrefix], with a 50ms timeout,
// failing open.
type RedisConfig struct {
	// Config is the rule, the same as a Local's, counted for every process
	// that shares the Redis and the Prefix. Its zero fields mean the same
	// defaults: 10%, 10 retries per second, a 10s window.
	Config

	// DestinationKey is the deployment's secret (at least 16 bytes) under
	// which destinations are named in Redis: key names are HMACs of the
	// destination, so a destination that holds a credential hash
	// (limiter.ByCredential) cannot be tested against guessed credentials
	// by whoever lists the keys. Required: NewRedis fails with
	// ErrNoDestinationKey without one. Every process sharing a budget uses
	// the same secret; it may be the limiter's BoundaryKey (the hashes are
	// domain-separated). Changing it starts every budget afresh.
	DestinationKey []byte

	// Prefix starts every key. Processes share a destination's budget
	// when they use the same Redis, Prefix and rule. Empty means
	// [DefaultPrefix]. It must not contain '{' or '}', which would move
	// the cluster hash tag.
	Prefix string

	// Timeout bounds one round trip to Redis (a Withdraw, or a Deposit
	// that sends the pending deposits), connection set-up and go-redis
	// retries included. Zero means 50ms.
	Timeout time.Duration

	// OnUnavailable says what Withdraw decides when Redis does not answer
	// in time, or is skipped while it is known to be down. Zero, and any
	// value other than [FailClosed], means [FailOpen].
	OnUnavailable FailMode

	// ProbeInterval is how long Redis is left alone after a failure:
	// decisions in between go straight to the OnUnavailable policy, and
	// then one call probes Redis again. An outage thus costs one timeout
	// per interval, not one per decision. Zero means 1s.
	ProbeInterval time.Duration

	// FlushInterval is how often a Deposit sends the deposits counted in
	// this process since the last round trip. A Withdraw always sends them
	// first. Deposits of this process therefore reach the other processes
	// up to FlushInterval late, which delays their credit for retries (see
	// [Redis]). Zero means 1s; a negative value sends them with every
	// Deposit, about one round trip per first attempt.
	FlushInterval time.Duration

	// Logger receives one line when Redis becomes unavailable and one
	// when it answers again. Destinations and keys are never logged. Nil
	// means silent.
	Logger *slog.Logger
}

// orDefault returns d when v is zero or negative, and v otherwise.
func orDefault(v, d time.Duration) time.Duration {
	if v <= 0 {
		return d
	}
	return v
}
