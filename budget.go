package retrybudget

import (
	"context"
	"sync"
	"time"
)

// Budget bounds the retries sent to a destination to a fraction of its
// traffic, so an outage does not multiply the load on a provider. The
// Transport deposits one credit per first attempt and withdraws one per
// retry; a refused withdrawal ends the call with ErrBudgetExhausted.
// First attempts are never refused by a Budget.
//
// LocalBudget counts one process; package budget shares one budget through
// Redis. Implementations must be safe for concurrent use.
type Budget interface {
	// Deposit records a first attempt to dest.
	Deposit(ctx context.Context, dest string)
	// Withdraw asks to spend one retry on dest. The check and the spend
	// are one atomic step, so racing callers cannot overshoot.
	Withdraw(ctx context.Context, dest string) BudgetDecision
}

// BudgetDecision is a Budget's answer to one withdrawal.
type BudgetDecision struct {
	// Allowed reports whether the retry may be sent.
	Allowed bool
	// Deposits is the number of first attempts in the current window.
	Deposits int64
	// Retries is the number of retries allowed in the current window,
	// this one included when Allowed.
	Retries int64
	// Degraded reports that a shared budget could not be reached and the
	// decision came from its fallback policy.
	Degraded bool
}

// Ratio returns retries per first attempt in the window; 0 without deposits.
func (d BudgetDecision) Ratio() float64 {
	if d.Deposits == 0 {
		return 0
	}
	return float64(d.Retries) / float64(d.Deposits)
}

// UnlimitedBudget is a Budget that allows every retry. Use it to turn the
// retry budget off.
type UnlimitedBudget struct{}

// Deposit implements Budget.
func (UnlimitedBudget) Deposit(context.Context, string) {}

// Withdraw implements Budget; it always allows.
func (UnlimitedBudget) Withdraw(context.Context, string) BudgetDecision {
	return BudgetDecision{Allowed: true}
}

// Defaults of a BudgetConfig's zero fields.
const (
	DefaultBudgetPercent     = 0.10
	DefaultMinRetriesPerSec  = 10
	DefaultBudgetWindow      = 10 * time.Second
	DefaultBudgetIdleTimeout = 5 * time.Minute
)

// BudgetConfig configures a retry budget. The rule: a retry to a destination
// is allowed while the retries of the last Window stay under Percent of its
// first attempts in that window, or while the floor of MinRetriesPerSec
// (a token bucket holding at most one second's worth) has a token, so that a
// client with little traffic can still retry. This follows Finagle's
// RetryBudget and the 10% per-client budget of Google's SRE book.
type BudgetConfig struct {
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

// BudgetRule is the rule a BudgetConfig puts in force: its defaults applied,
// "none" as zero. It is a type of its own so that it cannot be passed back
// where a zero field would mean the default again.
type BudgetRule struct {
	// Percent is the fraction of first attempts that may be retried.
	Percent float64
	// MinRetriesPerSec is the floor of retries per second.
	MinRetriesPerSec float64
	// Window is how long deposits and withdrawals count.
	Window time.Duration
}

// Rule returns the rule c puts in force. Shared budgets (package budget)
// and planners use it to apply exactly the rule a LocalBudget applies.
func (c BudgetConfig) Rule() BudgetRule {
	r := BudgetRule{Percent: c.Percent, MinRetriesPerSec: c.MinRetriesPerSec, Window: c.Window}
	switch {
	case r.Percent == 0:
		r.Percent = DefaultBudgetPercent
	case r.Percent < 0:
		r.Percent = 0
	case r.Percent > 1:
		r.Percent = 1
	}
	switch {
	case r.MinRetriesPerSec == 0:
		r.MinRetriesPerSec = DefaultMinRetriesPerSec
	case r.MinRetriesPerSec < 0:
		r.MinRetriesPerSec = 0
	}
	if r.Window <= 0 {
		r.Window = DefaultBudgetWindow
	}
	return r
}

// LocalBudget is a Budget counted in this process, per destination.
// Destinations unused for longer than five minutes are forgotten.
type LocalBudget struct {
	mu    sync.Mutex // guards dests and lastSweep
	dests map[string]*budgetCounter
	// lastSweep is when idle destinations were last evicted.
	lastSweep time.Time
	cfg       BudgetRule
	now       func() time.Time
}

// NewLocalBudget returns a LocalBudget with cfg's zero fields defaulted.
func NewLocalBudget(cfg BudgetConfig) *LocalBudget {
	return newLocalBudget(cfg, time.Now)
}

// newLocalBudget returns a LocalBudget that reads the time from now.
func newLocalBudget(cfg BudgetConfig, now func() time.Time) *LocalBudget {
	return &LocalBudget{dests: map[string]*budgetCounter{}, cfg: cfg.Rule(), now: now}
}

// Deposit implements Budget.
func (b *LocalBudget) Deposit(_ context.Context, dest string) {
	b.DepositAt(dest, b.now())
}

// Withdraw implements Budget.
func (b *LocalBudget) Withdraw(_ context.Context, dest string) BudgetDecision {
	return b.WithdrawAt(dest, b.now())
}

// DepositAt records a first attempt to dest at now.
func (b *LocalBudget) DepositAt(dest string, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.counter(dest, now).deposit(&b.cfg, now)
}

// WithdrawAt decides a retry to dest at now, and spends it when allowed.
func (b *LocalBudget) WithdrawAt(dest string, now time.Time) BudgetDecision {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.counter(dest, now).withdraw(&b.cfg, now)
}

// counter returns dest's counter, creating it, and evicts idle ones once a
// window. counter requires that b.mu is held.
func (b *LocalBudget) counter(dest string, now time.Time) *budgetCounter {
	if now.Sub(b.lastSweep) > b.cfg.Window {
		for k, c := range b.dests {
			if now.Sub(c.lastUse) > DefaultBudgetIdleTimeout {
				delete(b.dests, k)
			}
		}
		b.lastSweep = now
	}
	c := b.dests[dest]
	if c == nil {
		c = &budgetCounter{floor: b.cfg.MinRetriesPerSec, floorAt: now}
		b.dests[dest] = c
	}
	c.lastUse = now
	return c
}

// budgetCounter is one destination's sliding window of deposits and
// retries, and its floor bucket.
type budgetCounter struct {
	win window // a: deposits, b: retries
	// floor is the floor bucket's tokens, refilled at MinRetriesPerSec up
	// to one second's worth; floorAt is when it was last refilled.
	floor   float64
	floorAt time.Time
	lastUse time.Time
}

func (c *budgetCounter) deposit(cfg *BudgetRule, now time.Time) {
	c.win.advance(cfg.Window, now)
	c.win.a[c.win.slot]++
}

func (c *budgetCounter) withdraw(cfg *BudgetRule, now time.Time) BudgetDecision {
	c.win.advance(cfg.Window, now)
	var d BudgetDecision
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
