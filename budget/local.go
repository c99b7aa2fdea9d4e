package budget

import (
	"context"
	"sync"
	"time"

	"github.com/retrybudget/retrybudget/internal/lru"
	"github.com/retrybudget/retrybudget/internal/schedule"
)

// Defaults of a Config's zero fields.
const (
	DefaultPercent          = 0.10
	DefaultMinRetriesPerSec = 10
	DefaultWindow           = 10 * time.Second
)

// idleTimeout is how long a destination unused is remembered, by Local and
// by the pending deposits of Redis alike.
const idleTimeout = 5 * time.Minute

// Config configures a retry budget. The rule: a retry to a destination
// is allowed while the retries of the last Window stay under Percent of its
// first attempts in that window, or while the floor of MinRetriesPerSec
// (a token bucket holding at most one second's worth) has a token, so that a
// client with little traffic can still retry. This follows Finagle's
// RetryBudget and the 10% per-client budget of Google's SRE book.
type Config struct {
	// Percent is the fraction of first attempts that may be retried, in
	// [0, 1]. Zero means 0.10; a negative value means none (the floor
	// alone).
	Percent float64
	// MinRetriesPerSec is the floor of retries per second allowed
	// whatever the traffic. Zero means 10; a negative value means none.
	MinRetriesPerSec float64
	// Window is how long deposits and withdrawals count. Zero means 10s.
	Window time.Duration
}

// Rule is the rule a Config puts in force: its defaults applied,
// "none" as zero. It is a type of its own so that it cannot be passed back
// where a zero field would mean the default again.
type Rule struct {
	// Percent is the fraction of first attempts that may be retried.
	Percent float64
	// MinRetriesPerSec is the floor of retries per second.
	MinRetriesPerSec float64
	// Window is how long deposits and withdrawals count.
	Window time.Duration
}

// Rule returns the rule c puts in force. Redis and the planner (package
// plan) use it to apply exactly the rule a Local applies.
func (c Config) Rule() Rule {
	r := Rule(c)
	r.Percent = schedule.Fraction(r.Percent, DefaultPercent)
	r.MinRetriesPerSec = schedule.Knob(r.MinRetriesPerSec, DefaultMinRetriesPerSec, 0)
	if r.Window <= 0 {
		r.Window = DefaultWindow
	}
	return r
}

// Local is a Budget counted in this process, per destination.
// Destinations unused for longer than five minutes are forgotten, and at
// most 10,000 are remembered, the least recently used forgotten first (it
// starts again with a fresh floor, as after an idle spell); no call scans
// them all.
type Local struct {
	mu    sync.Mutex // guards dests
	dests *lru.Map[string, *counter]
	cfg   Rule
	now   func() time.Time
}

// NewLocal returns a Local with cfg's zero fields defaulted.
func NewLocal(cfg Config) *Local {
	return NewLocalClock(cfg, time.Now)
}

// NewLocalClock returns a Local with cfg's zero fields defaulted that reads
// the time from now instead of time.Now. The Transport passes its own
// clock, so the budget it builds by default runs on the Transport's time;
// a simulation passes a virtual one.
func NewLocalClock(cfg Config, now func() time.Time) *Local {
	idle := func(c *counter, now time.Time) bool { return now.Sub(c.lastUse) > idleTimeout }
	return &Local{dests: lru.New[string](maxDestinations, idle), cfg: cfg.Rule(), now: now}
}

// Deposit implements Budget.
func (b *Local) Deposit(_ context.Context, dest string) {
	b.depositAt(dest, b.now())
}

// Withdraw implements Budget.
func (b *Local) Withdraw(_ context.Context, dest string) Decision {
	return b.withdrawAt(dest, b.now())
}

// depositAt records a first attempt to dest at now.
func (b *Local) depositAt(dest string, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.counter(dest, now).deposit(&b.cfg, now)
}

// withdrawAt decides a retry to dest at now, and spends it when allowed.
func (b *Local) withdrawAt(dest string, now time.Time) Decision {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.counter(dest, now).withdraw(&b.cfg, now)
}

// counter returns dest's counter, creating it; adding one sweeps a few
// idle ones (see lru.Map.Put). counter requires that b.mu is held.
func (b *Local) counter(dest string, now time.Time) *counter {
	c, ok := b.dests.Get(dest)
	if !ok {
		c = &counter{floor: b.cfg.MinRetriesPerSec, floorAt: now}
		b.dests.Put(dest, c, now)
	}
	c.lastUse = now
	return c
}

// counter is one destination's sliding window of deposits and
// retries, and its floor bucket.
type counter struct {
	win window // a: deposits, b: retries
	// floor is the floor bucket's tokens, refilled at MinRetriesPerSec up
	// to one second's worth; floorAt is when it was last refilled.
	floor   float64
	floorAt time.Time
	lastUse time.Time
}

func (c *counter) deposit(cfg *Rule, now time.Time) {
	c.win.advance(cfg.Window, now)
	c.win.a[c.win.slot]++
}

func (c *counter) withdraw(cfg *Rule, now time.Time) Decision {
	c.win.advance(cfg.Window, now)
	var d Decision
	d.Deposits, d.Retries = c.win.sums()
	if elapsed := now.Sub(c.floorAt); elapsed > 0 {
		c.floor = min(cfg.MinRetriesPerSec, c.floor+elapsed.Seconds()*cfg.MinRetriesPerSec)
		c.floorAt = now
	}
	switch {
	case float64(d.Retries+1) <= cfg.Percent*float64(d.Deposits):
	case c.floor >= 1:
		c.floor--
	default:
		return d
	}
	c.win.b[c.win.slot]++
	d.Retries++
	d.Allowed = true
	return d
}
