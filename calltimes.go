package retrybudget

import (
	"sync"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// The usual run time of the calls that own an action, per tenant and
// operation, so that a duplicate told ErrPending comes back when the owner
// can have finished rather than at the end of its lease.

// maxCallTimes caps the tenant and operation pairs a Transport tracks: both
// come from the caller's Action. Past the cap the least recently seen pair
// gives way to a new one.
const maxCallTimes = 1024

// callTimeWeight is the weight of the newest run in the moving average.
const callTimeWeight = 0.25

// minPendingWait is the shortest wait a pending answer gives: a duplicate
// coming back sooner would only find the owner still running.
const minPendingWait = 10 * time.Millisecond

// callTimes tracks, per tenant and operation, how long a call that owns its
// action runs until it settles the record: an exponentially weighted moving
// average of this Transport's calls. Keyed by tenant as well as operation,
// one tenant's slow calls never move another's estimate. Memory is bounded:
// maxCallTimes entries.
type callTimes struct {
	mu   sync.Mutex // guards runs and tick
	runs map[callTimeKey]*callTime
	tick uint64 // counts updates, to find the least recently seen
}

type callTimeKey struct{ tenant, operation string }

type callTime struct {
	avg  time.Duration
	seen uint64
}

// observe records that a call owning k ran for d until it settled. A nil
// callTimes records nothing.
func (c *callTimes) observe(k ledger.Key, d time.Duration) {
	if c == nil || d < 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	key := callTimeKey{k.Tenant, k.Operation}
	if e := c.runs[key]; e != nil {
		e.avg += time.Duration(callTimeWeight * float64(d-e.avg))
		e.seen = c.tick
		return
	}
	if c.runs == nil {
		c.runs = map[callTimeKey]*callTime{}
	}
	if len(c.runs) >= maxCallTimes {
		var coldest callTimeKey
		var seen uint64
		first := true
		for key, e := range c.runs {
			if first || e.seen < seen {
				coldest, seen, first = key, e.seen, false
			}
		}
		delete(c.runs, coldest)
	}
	c.runs[key] = &callTime{avg: d, seen: c.tick}
}

// usual returns k's tenant and operation's moving average, and false when
// no call was observed.
func (c *callTimes) usual(k ledger.Key) (time.Duration, bool) {
	if c == nil {
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.runs[callTimeKey{k.Tenant, k.Operation}]
	if e == nil {
		return 0, false
	}
	return e.avg, true
}

// pendingWait returns how long a call told VerdictPending by res should
// wait before it comes back: what is left of the usual run time of k's
// tenant and operation since the owner was granted the action, at least
// minPendingWait and a quarter of the usual run time (an owner slower than
// usual is not polled in a tight loop), and never past the owner's lease
// (res.RetryAfter), after which the action is taken over anyway. Without
// an estimate it is the lease. Times come from the record, on the store's
// clock.
func (c *callTimes) pendingWait(k ledger.Key, res ledger.Reservation) time.Duration {
	usual, ok := c.usual(k)
	if !ok || res.RetryAfter <= 0 {
		return res.RetryAfter
	}
	wait := usual
	if granted, ok := grantedAt(res.Record); ok {
		// The store's now: a pending answer's RetryAfter is counted to
		// the lease's end from it.
		now := res.Record.LeaseUntil.Add(-res.RetryAfter)
		wait -= now.Sub(granted)
	}
	wait = max(wait, usual/4, minPendingWait)
	return min(wait, res.RetryAfter)
}

// grantedAt returns when the current owner of rec was granted it: the
// newest entry of its history that is a grant.
func grantedAt(rec ledger.Record) (time.Time, bool) {
	for i := len(rec.Attempts) - 1; i >= 0; i-- {
		if v, ok := ledger.ParseVerdict(rec.Attempts[i].Class); ok && v.Owns() {
			return rec.Attempts[i].At, !rec.Attempts[i].At.IsZero()
		}
	}
	return time.Time{}, false
}
