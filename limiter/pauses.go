package limiter

import (
	"sync"
	"sync/atomic"
	"time"
)

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
	m  map[string]time.Time
}

// until returns the end of boundary's pause if it is paused at now, and
// the zero time otherwise.
func (p *pauses) until(boundary string, now time.Time) time.Time {
	if p.n.Load() == 0 {
		return time.Time{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	end, ok := p.m[boundary]
	if !ok {
		return time.Time{}
	}
	if !end.After(now) {
		delete(p.m, boundary)
		p.n.Add(-1)
		return time.Time{}
	}
	return end
}

// extend pauses boundary until end unless it is paused longer already, and
// returns the end of the pause in force. It also forgets pauses that have
// ended, which keeps the map as small as the set of paused boundaries.
func (p *pauses) extend(boundary string, end, now time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = make(map[string]time.Time)
	}
	for b, e := range p.m {
		if !e.After(now) {
			delete(p.m, b)
		}
	}
	if cur, ok := p.m[boundary]; ok && !end.After(cur) {
		end = cur
	}
	p.m[boundary] = end
	p.n.Store(int64(len(p.m)))
	return end
}
