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
// per destination: the defence against a metastable overload, in which a
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
// Only destinations that ran out of time in the last Window are
// remembered, at most 10,000, the least recently used forgotten first;
// while there is none, [Overload.Quiet] reports it without a lock. It is
// safe for concurrent use.
type Overload struct {
	mu    sync.Mutex // guards dests
	dests *lru.Map[string, *overloadCounter]
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
	expired := func(c *overloadCounter, now time.Time) bool { return now.Sub(c.lastTimeout) > cfg.Window }
	return &Overload{dests: lru.New[string](maxDestinations, expired), cfg: cfg, rand: rand.Float64}
}

// overloadCounter is one destination's window; a: attempts ended, b: those
// that ran out of time.
type overloadCounter struct {
	win window
	// longest holds, per slot of win, the longest patience that ran out.
	longest     [windowSlots]time.Duration
	lastTimeout time.Time
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
// bound.
func (o *Overload) RefuseProbability(dest string, patience time.Duration, now time.Time) float64 {
	if o.Quiet() {
		return 0
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.probability(dest, patience, now)
}

// probability requires that o.mu is held.
func (o *Overload) probability(dest string, patience time.Duration, now time.Time) float64 {
	c := o.counter(dest, now, false)
	if c == nil || patience <= 0 {
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
// attempt waiting at most patience (zero: no bound).
func (o *Overload) Allow(dest string, patience time.Duration, now time.Time) bool {
	if o.Quiet() {
		return true
	}
	o.mu.Lock()
	p := o.probability(dest, patience, now)
	o.mu.Unlock()
	return p == 0 || o.rand() >= p
}

// Record counts one attempt to dest that ended at now: timedOut reports
// that it ran out of time after waiting patience (zero when unknown) for
// an answer. An attempt answered counts only while dest is remembered.
func (o *Overload) Record(dest string, patience time.Duration, timedOut bool, now time.Time) {
	if o.cfg.Disable || (!timedOut && o.tracked.Load() == 0) {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	c := o.counter(dest, now, timedOut)
	if c == nil {
		return
	}
	c.win.a[c.win.slot]++
	if timedOut {
		c.win.b[c.win.slot]++
		c.longest[c.win.slot] = max(c.longest[c.win.slot], patience)
		c.lastTimeout = now
	}
	o.tracked.Store(int64(o.dests.Len()))
}

// counter returns dest's counter moved to now, creating it when create is
// set. A counter whose window no longer holds a timeout is forgotten, and
// nil returned unless create is set. counter requires that o.mu is held.
func (o *Overload) counter(dest string, now time.Time, create bool) *overloadCounter {
	c, ok := o.dests.Get(dest)
	if ok {
		c.advance(o.cfg.Window, now)
		if _, timeouts := c.win.sums(); timeouts == 0 && !create {
			o.dests.Delete(dest)
			o.tracked.Store(int64(o.dests.Len()))
			return nil
		}
		return c
	}
	if !create {
		return nil
	}
	c = &overloadCounter{}
	c.advance(o.cfg.Window, now)
	o.dests.Put(dest, c, now)
	return c
}
