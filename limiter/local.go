package limiter

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// LocalConfig configures a [Local] limiter. The zero value is a limiter
// without rate limits that still honours cooldowns.
type LocalConfig struct {
	// Limits are checked together for every boundary: a request is allowed
	// only if every limit has a token, and nothing is taken if any refuses.
	// Empty means no rate limit: only cooldowns pause a boundary.
	Limits []Limit

	// OwnerShare, when positive, additionally holds each owner (tenant) of
	// a boundary to this fraction of every limit, so one owner's backlog
	// cannot take the whole boundary. It must be at most 1. Zero means no
	// per-owner limit.
	OwnerShare float64

	// IdleAfter is how long a boundary or owner must go unused before its
	// state may be dropped. State is dropped only once every bucket has
	// refilled and no cooldown is pending, so dropping it never lets a
	// request through that would otherwise be refused. Zero means one
	// minute.
	IdleAfter time.Duration

	// MaxCooldown caps a single cooldown, so that a hostile or broken
	// Retry-After cannot pause a boundary for days. Zero means five
	// minutes.
	MaxCooldown time.Duration
}

// Default values for zero config fields.
const (
	defaultIdleAfter   = time.Minute
	defaultMaxCooldown = 5 * time.Minute
)

// Local is a process-local [Limiter] built on golang.org/x/time/rate: one
// rate.Limiter per limit, per boundary (and per owner), created on first
// use and dropped when idle. Workers in other processes do not see its
// state, so a fleet of N processes sharing one credential sends up to N
// times the limit; use [Redis] for a fleet.
//
// Local is safe for concurrent use.
type Local struct {
	// mu guards entries, lastSweep and latest.
	mu        sync.Mutex
	entries   map[localKey]*localEntry
	lastSweep time.Time
	// latest is the latest time a decision was made at; rate.Limiter
	// misbehaves when time goes backwards (it rewinds its last update and
	// later counts the same refill twice), so decisions never go back past
	// it.
	latest time.Time

	boundary    []spec // limits of a boundary; immutable
	owner       []spec // limits of one owner's share; immutable, nil without OwnerShare
	idleAfter   time.Duration
	maxCooldown time.Duration

	// now is the clock seam: time.Now except in tests.
	now func() time.Time
}

// localKey names the state of a boundary (owner empty, isOwner false) or
// of one owner of a boundary.
type localKey struct {
	boundary string
	owner    string
	isOwner  bool
}

// localEntry is the state of one boundary or owner.
type localEntry struct {
	limiters []*rate.Limiter
	cooldown time.Time // zero, or the end of the boundary's pause
	lastUsed time.Time
}

// NewLocal returns a Local limiter for cfg. It fails with an error
// wrapping [ErrInvalidConfig] when a limit or the owner share is invalid.
func NewLocal(cfg LocalConfig) (*Local, error) {
	return newLocal(cfg, time.Now)
}

func newLocal(cfg LocalConfig, now func() time.Time) (*Local, error) {
	b, o, err := groupSpecs(cfg.Limits, cfg.OwnerShare)
	if err != nil {
		return nil, err
	}
	l := &Local{
		entries:     make(map[localKey]*localEntry),
		boundary:    b,
		owner:       o,
		idleAfter:   cmp0(cfg.IdleAfter, defaultIdleAfter),
		maxCooldown: cmp0(cfg.MaxCooldown, defaultMaxCooldown),
		now:         now,
	}
	return l, nil
}

// Allow decides r at the current time. It never returns an error.
func (l *Local) Allow(_ context.Context, r Request) (Decision, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.allowLocked(r, l.now()), nil
}

// AllowAt decides r as of now and takes the tokens when it is allowed. It
// is the pure form of Allow, for tests and simulations that bring their
// own clock. A now earlier than a previous decision's is treated as that
// earlier decision's time.
func (l *Local) AllowAt(r Request, now time.Time) Decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.allowLocked(r, now)
}

// allowLocked requires that l.mu is held.
func (l *Local) allowLocked(r Request, now time.Time) Decision {
	if now.Before(l.latest) {
		now = l.latest
	}
	l.latest = now
	l.sweepLocked(now)

	b := l.entryLocked(localKey{boundary: r.Boundary}, l.boundary, now)
	if b.cooldown.After(now) {
		return cooldownDecision(b.cooldown, now)
	}
	var o *localEntry
	if l.owner != nil && r.Owner != "" {
		o = l.entryLocked(localKey{boundary: r.Boundary, owner: r.Owner, isOwner: true}, l.owner, now)
	}

	// Check every bucket before taking from any, so that a refusal takes
	// nothing.
	var wait time.Duration
	var reason Reason
	for _, lim := range b.limiters {
		if w := waitFor(lim, now); w > wait {
			wait, reason = w, ReasonRate
		}
	}
	if o != nil {
		for _, lim := range o.limiters {
			if w := waitFor(lim, now); w > wait {
				wait, reason = w, ReasonOwner
			}
		}
	}
	if wait > 0 {
		return Decision{RetryAfter: wait, Reason: reason}
	}
	for _, lim := range b.limiters {
		lim.AllowN(now, 1)
	}
	if o != nil {
		for _, lim := range o.limiters {
			lim.AllowN(now, 1)
		}
	}
	return Decision{Allowed: true}
}

// waitFor returns how long lim needs until it has one token at now, rounded
// up to whole microseconds so that waiting that long is enough despite
// float rounding.
func waitFor(lim *rate.Limiter, now time.Time) time.Duration {
	tokens := lim.TokensAt(now)
	if tokens >= 1 {
		return 0
	}
	seconds := (1 - tokens) / float64(lim.Limit())
	return ceilMicro(time.Duration(seconds * float64(time.Second)))
}

// Cooldown pauses boundary until the given time, capped at MaxCooldown
// from now. It never returns an error.
func (l *Local) Cooldown(_ context.Context, boundary string, until time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if limit := now.Add(l.maxCooldown); until.After(limit) {
		until = limit
	}
	e := l.entryLocked(localKey{boundary: boundary}, l.boundary, now)
	if until.After(e.cooldown) {
		e.cooldown = until
	}
	return nil
}

// entryLocked returns the state for k, creating it with full buckets.
// It requires that l.mu is held.
func (l *Local) entryLocked(k localKey, specs []spec, now time.Time) *localEntry {
	e, ok := l.entries[k]
	if !ok {
		e = &localEntry{limiters: make([]*rate.Limiter, len(specs))}
		for i, s := range specs {
			e.limiters[i] = rate.NewLimiter(rate.Every(s.duration()), int(s.burst))
		}
		l.entries[k] = e
	}
	e.lastUsed = now
	return e
}

// sweepLocked drops idle state at most once per IdleAfter, so the cost is
// amortised over the decisions in between. It requires that l.mu is held.
func (l *Local) sweepLocked(now time.Time) {
	if now.Sub(l.lastSweep) < l.idleAfter {
		return
	}
	l.lastSweep = now
	for k, e := range l.entries {
		if now.Sub(e.lastUsed) >= l.idleAfter && e.idle(now) {
			delete(l.entries, k)
		}
	}
}

// idle reports whether dropping e would change no decision: every bucket
// is full again and no cooldown is pending.
func (e *localEntry) idle(now time.Time) bool {
	if e.cooldown.After(now) {
		return false
	}
	for _, lim := range e.limiters {
		if lim.TokensAt(now) < float64(lim.Burst()) {
			return false
		}
	}
	return true
}

// len returns the number of boundaries and owners with state, for tests.
func (l *Local) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}
