package budget

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/retrybudget/retrybudget/internal/keyedhash"
	"github.com/retrybudget/retrybudget/internal/lru"
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

// pendings maps destinations to their pending deposits: at most
// maxDestinations of them, the least recently used forgotten first, and
// those idle for longer than idleTimeout dropped as others are added, as
// Local does. A destination is the URL host by default, which a caller may
// choose (webhook delivery). Forgetting one drops deposits not yet sent,
// which only makes the budget stricter.
type pendings struct {
	mu     sync.Mutex // guards dests
	dests  *lru.Map[string, *pending]
	prefix string           // immutable
	keyed  keyedhash.Hasher // names destinations (DestinationKey); immutable
}

func newPendings(keyed keyedhash.Hasher, prefix string) *pendings {
	idle := func(d *pending, now time.Time) bool { return now.UnixNano()-d.sent.Load() > int64(idleTimeout) }
	return &pendings{dests: lru.New[string](maxDestinations, idle), keyed: keyed, prefix: prefix}
}

// get returns dest's pending deposits, creating them at now.
func (p *pendings) get(dest string, now time.Time) *pending {
	p.mu.Lock()
	defer p.mu.Unlock()
	d, ok := p.dests.Get(dest)
	if !ok {
		// The first deposits wait for a flush interval too: with no
		// round trip yet, "sent" starts now.
		d = &pending{key: destKey(p.keyed, p.prefix, dest)}
		d.sent.Store(now.UnixNano())
		p.dests.Put(dest, d, now)
	}
	return d
}
