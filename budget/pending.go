package budget

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/retrybudget/retrybudget/internal/keyedhash"
)

// pending is one destination's deposits not yet sent to Redis. Deposits
// are counted here and sent with the next Withdraw, or by the first
// Deposit at least a flush interval after the last round trip, so a
// healthy destination costs one round trip per interval per process
// instead of one per first attempt.
type pending struct {
	key string // the destination's Redis key; immutable
	// n is the number of deposits counted since the last round trip.
	n atomic.Int64
	// sent is when, in Unix nanoseconds, the deposits were last taken for
	// a round trip. Deposits race to advance it with one CAS; the winner
	// sends. It also tells how long the destination has been idle.
	sent atomic.Int64
}

// pendings maps destinations to their pending deposits, forgetting those
// idle for longer than idleTimeout, as Local does.
type pendings struct {
	mu    sync.RWMutex // guards dests
	dests map[string]*pending
	// swept is when, in Unix nanoseconds, idle destinations were last
	// evicted.
	swept  atomic.Int64
	prefix string           // immutable
	keyed  keyedhash.Hasher // names destinations (DestinationKey); immutable
	every  time.Duration    // sweep interval; immutable
}

func newPendings(keyed keyedhash.Hasher, prefix string, every time.Duration) *pendings {
	return &pendings{dests: map[string]*pending{}, keyed: keyed, prefix: prefix, every: every}
}

// get returns dest's pending deposits, creating them at now.
func (p *pendings) get(dest string, now time.Time) *pending {
	p.mu.RLock()
	d := p.dests[dest]
	p.mu.RUnlock()
	if d != nil {
		return d
	}
	p.sweep(now)
	p.mu.Lock()
	defer p.mu.Unlock()
	if d = p.dests[dest]; d == nil {
		// The first deposits wait for a flush interval too: with no
		// round trip yet, "sent" starts now.
		d = &pending{key: destKey(p.keyed, p.prefix, dest)}
		d.sent.Store(now.UnixNano())
		p.dests[dest] = d
	}
	return d
}

// sweep evicts idle destinations, at most once per sweep interval. It runs
// only when a destination is added, the only time the map grows. A caller
// that fetched an entry just before it was evicted counts one deposit into
// it that is never sent: the entry was idle for minutes, and a lost
// deposit only makes the budget stricter.
func (p *pendings) sweep(now time.Time) {
	last := p.swept.Load()
	if now.UnixNano()-last < int64(p.every) || !p.swept.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	idle := now.Add(-idleTimeout).UnixNano()
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, d := range p.dests {
		if d.sent.Load() < idle {
			delete(p.dests, k)
		}
	}
}
