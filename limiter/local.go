package limiter

import (
	"container/list"
	"context"
	"errors"
	"fmt"
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

	// MaxBoundaries caps the state Local keeps: one entry per boundary,
	// and one per owner of a boundary with OwnerShare. A boundary is often
	// a URL host that a caller may choose (webhook delivery), so without a
	// cap its memory would have no bound. An entry with a cooldown pending
	// or a bucket not yet refilled is never dropped to make room, since
	// that would reset its limit. Past the cap, until idle state goes, the
	// requests of every new boundary (and of every new owner) share one
	// overflow entry with one boundary's limits (and one owner's share):
	// newcomers are slowed together, never all refused, and no held limit
	// is reset. A cooldown for a new boundary past the cap fails with
	// [ErrTooManyBoundaries]. Zero means 10,000.
	MaxBoundaries int

	// MaxCooldown caps a single cooldown, so that a hostile or broken
	// Retry-After cannot pause a boundary for days. Zero means five
	// minutes.
	MaxCooldown time.Duration
}

// Default values for zero config fields.
const (
	defaultIdleAfter     = time.Minute
	defaultMaxCooldown   = 5 * time.Minute
	defaultMaxBoundaries = 10_000
)

// Entries a [Local] examines for idle state: per decision, so that idle
// state goes without a scan of all of it, and for a new entry at the cap,
// so that room is found in O(1) when the least recently used are idle.
const (
	sweepPerDecision = 2
	sweepForRoom     = 8
)

// Local is a process-local [Limiter] built on golang.org/x/time/rate: one
// rate.Limiter per limit, per boundary (and per owner), created on first
// use and dropped when idle, at most LocalConfig.MaxBoundaries of them.
// Workers in other processes do not see its state, so a fleet of N
// processes sharing one credential sends up to N times the limit; use
// [Redis] for a fleet.
//
// Each decision examines two of the least recently used entries and drops
// those idle, so no call scans them all.
//
// Local is safe for concurrent use.
type Local struct {
	// mu guards entries, order and latest.
	mu      sync.Mutex
	entries map[localKey]*localEntry
	// order holds every entry's key, the most recently used at the front
	// (an entry examined and kept by a sweep also goes to the front).
	order list.List
	// latest is the latest time a decision was made at; rate.Limiter
	// misbehaves when time goes backwards (it rewinds its last update and
	// later counts the same refill twice), so decisions never go back past
	// it.
	latest time.Time

	boundary []spec // limits of a boundary; immutable
	owner    []spec // limits of one owner's share; immutable, nil without OwnerShare
	// overflow is the state every new boundary shares past the cap,
	// overflowOwner every new owner's (nil without OwnerShare); neither is
	// in entries. Their cooldowns stay zero.
	overflow, overflowOwner *localEntry
	idleAfter               time.Duration
	maxCooldown             time.Duration
	max                     int

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
	elem     *list.Element // in Local.order
}

// ErrTooManyBoundaries is the error of a [Local] asked to pause a new
// boundary while it holds LocalConfig.MaxBoundaries entries, none of which
// can go without resetting a limit or a cooldown. Test for it with
// errors.Is.
var ErrTooManyBoundaries = errors.New("limiter: too many boundaries")

// NewLocal returns a Local limiter for cfg. It fails with an error
// wrapping [ErrInvalidConfig] when a limit, the owner share or
// MaxBoundaries is invalid.
func NewLocal(cfg LocalConfig) (*Local, error) {
	return newLocal(cfg, time.Now)
}

func newLocal(cfg LocalConfig, now func() time.Time) (*Local, error) {
	b, o, err := groupSpecs("LocalConfig.", cfg.Limits, cfg.OwnerShare)
	if err != nil {
		return nil, err
	}
	if cfg.MaxBoundaries < 0 {
		return nil, fmt.Errorf("%w: LocalConfig.MaxBoundaries is %d: it must not be negative; zero means %d", ErrInvalidConfig, cfg.MaxBoundaries, defaultMaxBoundaries)
	}
	l := &Local{
		entries:     make(map[localKey]*localEntry),
		boundary:    b,
		owner:       o,
		idleAfter:   cmp0(cfg.IdleAfter, defaultIdleAfter),
		maxCooldown: cmp0(cfg.MaxCooldown, defaultMaxCooldown),
		max:         cmp0(cfg.MaxBoundaries, defaultMaxBoundaries),
		now:         now,
	}
	l.overflow = newLocalEntry(b)
	if o != nil {
		l.overflowOwner = newLocalEntry(o)
	}
	return l, nil
}

// Allow decides r at the current time. Its error is always nil: a new
// boundary or owner past the cap is decided by the overflow entry (see
// LocalConfig.MaxBoundaries).
func (l *Local) Allow(_ context.Context, r Request) (Decision, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.allowLocked(r, l.now())
}

// AllowAt decides r as of now and takes the tokens when it is allowed. It
// is the pure form of Allow, for tests and simulations that bring their
// own clock. A now earlier than a previous decision's is treated as that
// earlier decision's time. Its error, like Allow's, is always nil.
func (l *Local) AllowAt(r Request, now time.Time) (Decision, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.allowLocked(r, now)
}

// allowLocked requires that l.mu is held.
func (l *Local) allowLocked(r Request, now time.Time) (Decision, error) {
	if now.Before(l.latest) {
		now = l.latest
	}
	l.latest = now
	l.sweepLocked(sweepPerDecision, now)

	b, _ := l.entryLocked(localKey{boundary: r.Boundary}, l.boundary, now)
	if until := l.pausedLocked(r.Boundary, b, now); !until.IsZero() {
		return cooldownDecision(until, now), nil
	}
	var o *localEntry
	if l.owner != nil && r.Owner != "" {
		o, _ = l.entryLocked(localKey{boundary: r.Boundary, owner: r.Owner, isOwner: true}, l.owner, now)
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
		return Decision{RetryAfter: wait, Reason: reason}, nil
	}
	for _, lim := range b.limiters {
		lim.AllowN(now, 1)
	}
	if o != nil {
		for _, lim := range o.limiters {
			lim.AllowN(now, 1)
		}
	}
	return Decision{Allowed: true}, nil
}

// pausedLocked returns the end of the pause boundary (whose entry is b) is
// under at now, its own or its scope's (see [Within]), whichever ends
// later; the zero time when neither is paused. A scope that was never
// paused has no entry and gets none. It requires that l.mu is held.
func (l *Local) pausedLocked(boundary string, b *localEntry, now time.Time) time.Time {
	var until time.Time
	if b.cooldown.After(now) {
		until = b.cooldown
	}
	if scope, ok := scopeOf(boundary); ok {
		if s := l.entries[localKey{boundary: scope}]; s != nil && s.cooldown.After(now) && s.cooldown.After(until) {
			until = s.cooldown
		}
	}
	return until
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
// from now, and with it every boundary within it (see [Within]). Its only
// error is one wrapping [ErrTooManyBoundaries], for a new boundary past the
// cap: the pause is not kept, since pausing the overflow entry would pause
// every newcomer, and the overflow's limits still bound what goes to it.
func (l *Local) Cooldown(_ context.Context, boundary string, until time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if limit := now.Add(l.maxCooldown); until.After(limit) {
		until = limit
	}
	e, own := l.entryLocked(localKey{boundary: boundary}, l.boundary, now)
	if !own {
		return fmt.Errorf("%w: %d held, none idle", ErrTooManyBoundaries, l.max)
	}
	if until.After(e.cooldown) {
		e.cooldown = until
	}
	return nil
}

// entryLocked returns the state for k, creating it with full buckets when
// there is room, and marks it used; own is false when there is no room and
// the state returned is the overflow entry every newcomer shares. It
// requires that l.mu is held.
func (l *Local) entryLocked(k localKey, specs []spec, now time.Time) (e *localEntry, own bool) {
	e, ok := l.entries[k]
	if !ok {
		if len(l.entries) >= l.max {
			l.sweepLocked(sweepForRoom, now)
			if len(l.entries) >= l.max {
				// Every entry is live: dropping one would reset its limit
				// or its pause, refusing the newcomer would lock out every
				// new boundary until they refill. It shares the overflow.
				if k.isOwner {
					return l.overflowOwner, false
				}
				return l.overflow, false
			}
		}
		e = newLocalEntry(specs)
		e.elem = l.order.PushFront(k)
		l.entries[k] = e
	} else {
		l.order.MoveToFront(e.elem)
	}
	e.lastUsed = now
	return e, true
}

// newLocalEntry returns state for specs with full buckets.
func newLocalEntry(specs []spec) *localEntry {
	e := &localEntry{limiters: make([]*rate.Limiter, len(specs))}
	for i, s := range specs {
		e.limiters[i] = rate.NewLimiter(rate.Every(s.duration()), int(s.burst))
	}
	return e
}

// sweepLocked examines up to n of the least recently used entries: it
// drops those unused for IdleAfter whose dropping changes no decision, and
// moves the others to the front, so that later sweeps reach the rest. It
// requires that l.mu is held.
func (l *Local) sweepLocked(n int, now time.Time) {
	for range min(n, len(l.entries)) {
		el := l.order.Back()
		k := el.Value.(localKey)
		if e := l.entries[k]; now.Sub(e.lastUsed) >= l.idleAfter && e.idle(now) {
			l.order.Remove(el)
			delete(l.entries, k)
			continue
		}
		l.order.MoveToFront(el)
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
