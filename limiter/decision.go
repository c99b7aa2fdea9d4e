package limiter

import (
	"fmt"
	"time"
)

// cooldownDecision refuses a request because its boundary is paused until
// until.
func cooldownDecision(until, now time.Time) Decision {
	return Decision{
		RetryAfter:    ceilMicro(until.Sub(now)),
		CooldownUntil: until,
		Reason:        ReasonCooldown,
	}
}

// ceilMicro rounds d up to whole microseconds, the resolution the limiters
// keep time in, so that waiting RetryAfter is always long enough. Positive
// durations stay positive.
func ceilMicro(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return (d + time.Microsecond - 1) / time.Microsecond * time.Microsecond
}

// cmp0 returns v, or def when v is zero.
func cmp0[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// errShare reports an invalid share field.
func errShare(field string, share float64) error {
	return fmt.Errorf("%w: %s %v must be in (0, 1]", ErrInvalidConfig, field, share)
}
