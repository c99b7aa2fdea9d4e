package limiter

import (
	"sync"
	"time"
)

// prefetched holds tokens taken from Redis ahead of need (RedisConfig.Prefetch),
// spent locally without a round trip until they run out or expire.
//
// The bound on what prefetching can do wrong: a prefetched token was already taken
// from the fleet's bucket in Redis, so the fleet never spends more tokens
// than the limit grants. It may spend them later than granted, by at most
// the prefetch TTL, so in any window of length W the fleet sends at most what
// the limit grants in W+TTL. Unused tokens expire after the TTL and are
// lost, which only makes the boundary run below its rate. A cooldown set by
// another process reaches this one once its prefetched tokens are spent or
// expired, so within the TTL; a cooldown set by this process drops its
// prefetched tokens at once.
type prefetched struct {
	// mu guards m and lastSweep.
	mu        sync.Mutex
	m         map[prefetchKey]prefetch
	lastSweep time.Time

	ttl time.Duration // immutable
}

type prefetchKey struct{ boundary, owner string }

type prefetch struct {
	tokens  int
	expires time.Time
}

func newPrefetched(ttl time.Duration) *prefetched {
	return &prefetched{m: make(map[prefetchKey]prefetch), ttl: ttl}
}

// take spends one prefetched token for k at now, reporting whether there was
// one.
func (l *prefetched) take(k prefetchKey, now time.Time) bool {
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

// put stores tokens prefetched at now for k.
func (l *prefetched) put(k prefetchKey, tokens int, now time.Time) {
	if tokens <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweepLocked(now)
	expires := now.Add(l.ttl)
	if ls, ok := l.m[k]; ok && now.Before(ls.expires) {
		// Two callers prefetched at once. Merge, keeping the earlier expiry so
		// that no token outlives its own TTL.
		tokens += ls.tokens
		expires = ls.expires
	}
	l.m[k] = prefetch{tokens: tokens, expires: expires}
}

// drop forgets every prefetch of boundary and of the boundaries within it
// (see [Within]), for a cooldown.
func (l *prefetched) drop(boundary string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.m {
		if k.boundary == boundary || Scope(k.boundary) == boundary {
			delete(l.m, k)
		}
	}
}

// sweepLocked drops expired prefetches at most once per TTL. It requires that
// l.mu is held.
func (l *prefetched) sweepLocked(now time.Time) {
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
