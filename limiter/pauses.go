package limiter

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/retrybudget/retrybudget/internal/lru"
)

// maxPauses caps the pauses a process remembers. A boundary is often the
// URL host, which a caller may control (webhook delivery), so the set is
// unbounded without a cap. Forgetting a pause is safe: Redis still holds
// it, and the next call to that boundary learns it again with one round
// trip.
const maxPauses = 10_000

// pauses remembers the cooldowns this process has set or been told of by
// Redis, so that a paused boundary costs no round trips until its pause
// ends. Pauses only grow, so a remembered one is never wrong, only
// possibly shorter than the fleet's.
type pauses struct {
	// n counts the entries of m, so the usual case, no pause at all, is
	// decided without the lock.
	n atomic.Int64
	// mu guards m.
	mu sync.Mutex
	// m maps a boundary to the end of its pause: at most maxPauses, the
	// least recently used forgotten first, ended ones swept two at a time
	// as pauses are added.
	m *lru.Map[string, time.Time]
}

// ended reports whether a pause ending at end is over at now.
func ended(end, now time.Time) bool { return !end.After(now) }

// until returns the end of the pause boundary is under at now, its own
// or its scope's (see [Within]), whichever ends later, and the zero time
// when neither is paused.
func (p *pauses) until(boundary string, now time.Time) time.Time {
	if p.n.Load() == 0 {
		return time.Time{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	end := p.lookupLocked(boundary, now)
	if scope, ok := scopeOf(boundary); ok {
		if s := p.lookupLocked(scope, now); s.After(end) {
			end = s
		}
	}
	return end
}

// lookupLocked returns the end of key's own pause if it is paused at now,
// forgetting it once ended, and the zero time otherwise. It requires that
// p.mu is held.
func (p *pauses) lookupLocked(key string, now time.Time) time.Time {
	end, ok := p.m.Get(key)
	if !ok {
		return time.Time{}
	}
	if ended(end, now) {
		p.m.Delete(key)
		p.n.Store(int64(p.m.Len()))
		return time.Time{}
	}
	return end
}

// extend pauses boundary until end unless it is paused longer already, and
// returns the end of the pause in force. Its cost does not grow with the
// number of paused boundaries.
func (p *pauses) extend(boundary string, end, now time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = lru.New[string, time.Time](maxPauses, ended)
	}
	if cur, ok := p.m.Get(boundary); ok && !end.After(cur) {
		end = cur
	}
	p.m.Put(boundary, end, now)
	p.n.Store(int64(p.m.Len()))
	return end
}
