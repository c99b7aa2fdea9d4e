package limiter

import (
	"sync"
	"time"
)

// leases holds tokens taken from Redis ahead of need (RedisConfig.Lease),
// spent locally without a round trip until they run out or expire.
//
// The bound on what leasing can do wrong: a leased token was already taken
// from the fleet's bucket in Redis, so the fleet never spends more tokens
// than the limit grants. It may spend them later than granted, by at most
// the lease TTL, so in any window of length W the fleet sends at most what
// the limit grants in W+TTL. Unused tokens expire after the TTL and are
// lost, which only makes the boundary run below its rate. A cooldown set by
// another process reaches this one once its leased tokens are spent or
// expired, so within the TTL; a cooldown set by this process drops its
// leases at once.
type leases struct {
	// mu guards m and lastSweep.
	mu        sync.Mutex
	m         map[leaseKey]lease
	lastSweep time.Time

	ttl time.Duration // immutable
}

type leaseKey struct{ boundary, owner string }

type lease struct {
	tokens  int
	expires time.Time
}

func newLeases(ttl time.Duration) *leases {
	return &leases{m: make(map[leaseKey]lease), ttl: ttl}
}

// take spends one leased token for k at now, reporting whether there was
// one.
func (l *leases) take(k leaseKey, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ls, ok := l.m[k]
	if !ok {
		return false
	}
	if ls.tokens <= 0 || !now.Before(ls.expires) {
		delete(l.m, k)
		return false
	}
	ls.tokens--
	l.m[k] = ls
	return true
}

// put stores tokens leased at now for k.
func (l *leases) put(k leaseKey, tokens int, now time.Time) {
	if tokens <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweepLocked(now)
	expires := now.Add(l.ttl)
	if ls, ok := l.m[k]; ok && now.Before(ls.expires) {
		// Two callers leased at once. Merge, keeping the earlier expiry so
		// that no token outlives its own TTL.
		tokens += ls.tokens
		expires = ls.expires
	}
	l.m[k] = lease{tokens: tokens, expires: expires}
}

// drop forgets every lease of boundary, for a cooldown.
func (l *leases) drop(boundary string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.m {
		if k.boundary == boundary {
			delete(l.m, k)
		}
	}
}

// sweepLocked drops expired leases at most once per TTL. It requires that
// l.mu is held.
func (l *leases) sweepLocked(now time.Time) {
	if now.Sub(l.lastSweep) < l.ttl {
		return
	}
	l.lastSweep = now
	for k, ls := range l.m {
		if !now.Before(ls.expires) {
			delete(l.m, k)
		}
	}
}
