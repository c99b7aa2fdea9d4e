package ledger

import "time"

// FakeClock is the package tests' fake clock, for the external tests.
type FakeClock = fakeClock

// NewFakeClock returns a FakeClock reading now.
func NewFakeClock(now time.Time) *FakeClock { return &fakeClock{now: now} }

// RedisKeyName exposes the Redis key of k's record to the external tests.
func RedisKeyName(r *Redis, k Key) string { return r.keyName(k) }
