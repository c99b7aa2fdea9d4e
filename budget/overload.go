package budget

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retrybudget/retrybudget/internal/lru"
)

// Defaults of an OverloadConfig's zero fields.
const (
	DefaultOverloadK      = 2.0
	DefaultOverloadWindow = time.Second
)

// overloadFloor is how many more timeouts than K allows a destination's
// window must hold before a call is refused: a client with little traffic
// (one stray timeout, then one call) is never refused, and its few
// requests could not keep a provider's queue full anyway.
const overloadFloor = 3

// overloadTenants is how many tenants must have run out of time at a
// destination within the Window before one's timeouts count against
// another's calls: a tenant's requests may be slow by what they ask (a
// long generation, a full export), and the tenant chooses that; several
// tenants slow at once point to the provider's queue.
const overloadTenants = 3

// OverloadConfig configures an [Overload].
type OverloadConfig struct {
	// K is how many attempts per attempt answered in time the client may
	// send before it starts refusing new calls: refusals begin when more
	// than 1−1/K of the window's attempts ran out of time. Zero means 2.
	K float64
	// Window is how long the attempts that ran out of time, and those
	// answered, count. It is short on purpose: once the provider's queue
	// has drained, the refusals stop within a Window. Zero means 1s.
	Window time.Duration
	// Disable turns the Overload off: it allows every call. False (the
	// default) refuses as described on [Overload].
	Disable bool
}

// Overload sheds the calls that a provider's queue cannot answer in time,
// per destination and tenant: the defence against a metastable overload, in which a
// provider with a deep queue spends its capacity on requests whose clients
// already gave up, every new attempt waits behind them past its own
// timeout, and the backlog outlives whatever slowed the provider down.
//
// It counts the attempts that ran out of time (their AttemptTimeout or
// the call's deadline expired before an answer) and the attempts answered,
// over the last Window. While more than K × answered attempts were sent,
// it refuses a new call with probability
// (attempts − K×answered − 3) / (attempts + 1), but only a call whose
// patience (the time its attempt may wait) is at most the longest patience
// that ran out in the window: waiting that long was not enough, so the
// call would time out too, after adding one more request to the queue. A
// call with more patience, or with no bound at all, is never refused; a
// destination whose attempts are answered, however slowly or with
// whatever status, is never refused either: a fast 503 costs the provider
// little, and the retry budget bounds its retries. The attempts refused
// let the queue drain, and the few let through find out when it has.
//
// The evidence is kept per destination and tenant ([Overload.AllowTenant],
// [Overload.RecordTenant]; Allow and Record are those of the tenant ""):
// a call is judged by its own tenant's attempts, so one tenant whose
// requests are slow by what they ask never gets another's refused. Only
// once at least three tenants ran out of time at the destination within
// the Window are the calls of every tenant judged by the destination's
// attempts as a whole too, since then the provider's queue is the likelier
// cause.
//
// Only destinations that ran out of time in the last Window are
// remembered, at most 10,000, the least recently used forgotten first, and
// of each at most 64 tenants, the one that ran out of time longest ago
// forgotten first;
// while there is none, [Overload.Quiet] reports it without a lock. It is
// safe for concurrent use.
type Overload struct {
	mu    sync.Mutex // guards dests
	dests *lru.Map[string, *overloadDest]
	// tracked is dests.Len(), written under mu and read without it.
	tracked atomic.Int64
	cfg     OverloadConfig
	// rand returns a uniform pick in [0, 1); a seam for tests.
	rand func() float64
}

// NewOverload returns an Overload with cfg's zero fields defaulted.
func NewOverload(cfg OverloadConfig) *Overload {
	if cfg.K <= 0 {
		cfg.K = DefaultOverloadK
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultOverloadWindow
	}
	expired := func(d *overloadDest, now time.Time) bool { return now.Sub(d.all.lastTimeout) > cfg.Window }
	return &Overload{dests: lru.New[string](maxDestinations, expired), cfg: cfg, rand: rand.Float64}
}

// maxOverloadTenants bounds the tenants whose windows a destination keeps;
// past it, the tenant that ran out of time longest ago is forgotten.
const maxOverloadTenants = 64

// overloadDest is what an Overload remembers of one destination: the
// window of every tenant's attempts, and one per tenant that ran out of
// time there.
type overloadDest struct {
	all     overloadCounter
	tenants map[string]*overloadCounter
}

// tenant returns tenant's counter moved to now, creating it when create
// is set. A counter whose window no longer holds a timeout is forgotten,
// and nil returned unless create is set.
func (d *overloadDest) tenant(tenant string, span time.Duration, now time.Time, create bool) *overloadCounter {
	c := d.tenants[tenant]
	if c != nil {
		c.advance(span, now)
		if _, timeouts := c.win.sums(); timeouts == 0 && !create {
			delete(d.tenants, tenant)
			return nil
		}
		return c
	}
	if !create {
		return nil
	}
	if d.tenants == nil {
		d.tenants = map[string]*overloadCounter{}
	}
	if len(d.tenants) >= maxOverloadTenants {
		var oldest string
		for t, o := range d.tenants {
			if c == nil || o.lastTimeout.Before(c.lastTimeout) {
				oldest, c = t, o
			}
		}
		delete(d.tenants, oldest)
	}
	c = &overloadCounter{}
	c.advance(span, now)
	d.tenants[tenant] = c
	return c
}

// overloadCounter is one window of a destination's or one tenant's
// attempts; a: attempts ended, b: those that ran out of time.
type overloadCounter struct {
	win window
	// longest holds, per slot of win, the longest patience that ran out.
	longest     [windowSlots]time.Duration
	lastTimeout time.Time
	// timedOut holds, in a destination's counter, the last
	// overloadTenants distinct tenants that ran out of time there and
	// when, so that several tenants are told from one; tenants without a
	// live timeout are zero.
	timedOut [overloadTenants]struct {
		tenant string
		at     time.Time
	}
}

// noteTenant records that tenant ran out of time at now, replacing the
// entry of the tenant that did longest ago.
func (c *overloadCounter) noteTenant(tenant string, now time.Time) {
	oldest := 0
	for i := range c.timedOut {
		if e := &c.timedOut[i]; e.tenant == tenant && !e.at.IsZero() {
			e.at = now
			return
		}
		if c.timedOut[i].at.Before(c.timedOut[oldest].at) {
			oldest = i
		}
	}
	c.timedOut[oldest].tenant, c.timedOut[oldest].at = tenant, now
}

// tenants reports whether overloadTenants distinct tenants ran out of time
// within window of now.
func (c *overloadCounter) tenants(window time.Duration, now time.Time) bool {
	for _, e := range c.timedOut {
		if e.at.IsZero() || now.Sub(e.at) > window {
			return false
		}
	}
	return true
}

// advance moves the window to now, clearing the expired slots of longest
// with those of win.
func (c *overloadCounter) advance(span time.Duration, now time.Time) {
	slot, epoch := c.win.slot, c.win.epoch
	c.win.advance(span, now)
	for i := range min(c.win.epoch-epoch, windowSlots) {
		c.longest[(slot+1+int(i))%windowSlots] = 0
	}
}

// Quiet reports whether no destination has an attempt that ran out of
// time in the last Window (give or take the time it takes to notice): then
// Allow allows every call and Record of an attempt answered counts
// nothing, so a caller may skip both, and reading the clock for them. It
// takes no lock.
func (o *Overload) Quiet() bool {
	return o.cfg.Disable || o.tracked.Load() == 0
}

// RefuseProbability returns the probability that Allow refuses a call to
// dest at now whose attempt may wait patience; zero patience means no
// bound. It is that of the tenant "" (see RefuseProbabilityTenant).
func (o *Overload) RefuseProbability(dest string, patience time.Duration, now time.Time) float64 {
	return o.RefuseProbabilityTenant(dest, "", patience, now)
}

// RefuseProbabilityTenant returns the probability that AllowTenant refuses
// a call of tenant to dest at now whose attempt may wait patience; zero
// patience means no bound.
func (o *Overload) RefuseProbabilityTenant(dest, tenant string, patience time.Duration, now time.Time) float64 {
	if o.Quiet() {
		return 0
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.probability(dest, tenant, patience, now)
}

// probability is the larger of the tenant's own and, once several tenants
// ran out of time there, the destination's. It requires that o.mu is
// held.
func (o *Overload) probability(dest, tenant string, patience time.Duration, now time.Time) float64 {
	if patience <= 0 {
		return 0
	}
	d := o.dest(dest, now, false)
	if d == nil {
		return 0
	}
	p := o.counterProbability(d.tenant(tenant, o.cfg.Window, now, false), patience)
	if d.all.tenants(o.cfg.Window, now) {
		p = max(p, o.counterProbability(&d.all, patience))
	}
	return p
}

// counterProbability is the refusal probability c's window gives a call
// that may wait patience; zero for a nil c.
func (o *Overload) counterProbability(c *overloadCounter, patience time.Duration) float64 {
	if c == nil {
		return 0
	}
	var longest time.Duration
	for _, l := range c.longest {
		longest = max(longest, l)
	}
	if patience > longest {
		return 0
	}
	attempts, timeouts := c.win.sums()
	answered := attempts - timeouts
	return max(0, (float64(attempts)-o.cfg.K*float64(answered)-overloadFloor)/float64(attempts+1))
}

// Allow decides whether a new call to dest may be sent at now, its
// attempt waiting at most patience (zero: no bound). It is AllowTenant of
// the tenant "".
func (o *Overload) Allow(dest string, patience time.Duration, now time.Time) bool {
	return o.AllowTenant(dest, "", patience, now)
}

// AllowTenant decides whether a new call of tenant to dest may be sent at
// now, its attempt waiting at most patience (zero: no bound).
func (o *Overload) AllowTenant(dest, tenant string, patience time.Duration, now time.Time) bool {
	if o.Quiet() {
		return true
	}
	o.mu.Lock()
	p := o.probability(dest, tenant, patience, now)
	o.mu.Unlock()
	return p == 0 || o.rand() >= p
}

// Record counts one attempt to dest that ended at now: timedOut reports
// that it ran out of time after waiting patience (zero when unknown) for
// an answer. It is RecordTenant of the tenant "".
func (o *Overload) Record(dest string, patience time.Duration, timedOut bool, now time.Time) {
	o.RecordTenant(dest, "", patience, timedOut, now)
}

// RecordTenant counts one attempt of tenant to dest that ended at now, in
// the tenant's window and the destination's: timedOut reports that it ran
// out of time after waiting patience (zero when unknown) for an answer. An
// attempt answered counts only in the windows remembered.
func (o *Overload) RecordTenant(dest, tenant string, patience time.Duration, timedOut bool, now time.Time) {
	if o.cfg.Disable || (!timedOut && o.tracked.Load() == 0) {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	d := o.dest(dest, now, timedOut)
	if d == nil {
		return
	}
	d.all.count(patience, timedOut, now)
	if timedOut {
		d.all.noteTenant(tenant, now)
	}
	if c := d.tenant(tenant, o.cfg.Window, now, timedOut); c != nil {
		c.count(patience, timedOut, now)
	}
	o.tracked.Store(int64(o.dests.Len()))
}

// count counts one attempt that ended at now, in the current slot.
func (c *overloadCounter) count(patience time.Duration, timedOut bool, now time.Time) {
	c.win.a[c.win.slot]++
	if timedOut {
		c.win.b[c.win.slot]++
		c.longest[c.win.slot] = max(c.longest[c.win.slot], patience)
		c.lastTimeout = now
	}
}

// dest returns dest's state, its window moved to now, creating it when
// create is set. A destination whose window no longer holds a timeout is
// forgotten, and nil returned unless create is set. dest requires that
// o.mu is held.
func (o *Overload) dest(dest string, now time.Time, create bool) *overloadDest {
	d, ok := o.dests.Get(dest)
	if ok {
		d.all.advance(o.cfg.Window, now)
		if _, timeouts := d.all.win.sums(); timeouts == 0 && !create {
			o.dests.Delete(dest)
			o.tracked.Store(int64(o.dests.Len()))
			return nil
		}
		return d
	}
	if !create {
		return nil
	}
	d = &overloadDest{}
	d.all.advance(o.cfg.Window, now)
	o.dests.Put(dest, d, now)
	return d
}
