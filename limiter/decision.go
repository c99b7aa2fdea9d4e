package limiter

import "time"

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
