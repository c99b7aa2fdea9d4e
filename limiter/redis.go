package limiter

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/internal/redisstore"
)

// RedisConfig configures a [Redis] limiter. The zero value is a fleet-wide
// cooldown without rate limits, failing open.
type RedisConfig struct {
	// Limits are checked together for every boundary, atomically in one
	// script: a request is allowed only if every limit has a token, and
	// nothing is taken if any refuses. Empty means no rate limit: only
	// cooldowns pause a boundary.
	Limits []Limit

	// OwnerShare, when positive, additionally holds each owner (tenant) of
	// a boundary to this fraction of every limit, checked in the same
	// script, so one owner's backlog cannot take the whole boundary. It
	// must be at most 1. Zero means no per-owner limit.
	OwnerShare float64

	// Prefix starts every key. It must not contain '{' or '}'. Empty means
	// [DefaultPrefix].
	Prefix string

	// BoundaryKey is the per-deployment secret (at least 16 bytes, the
	// same on every process of the fleet) under which HMAC-SHA256 names a
	// boundary's and an owner's Redis keys, so that whoever can list Redis
	// keys cannot test a guessed credential against a [ByCredential]
	// boundary. It is required: NewRedis fails with [ErrNoBoundaryKey]
	// without one. Changing it starts every boundary afresh (new keys, the
	// old ones expire on their own).
	BoundaryKey []byte

	// Timeout bounds how long one decision waits for Redis, from the call
	// to Allow: its round trip, including connection set-up and go-redis
	// retries, or its wait behind a coalesced batch in flight and then its
	// own (see [Redis] for the slack). Zero means 50ms.
	Timeout time.Duration

	// CooldownTimeout bounds the round trip that tells the fleet about a
	// cooldown. It is longer than Timeout because a cooldown is rare, the
	// caller is about to wait out a Retry-After anyway, and a lost one lets
	// every other worker keep calling a provider that asked them to stop.
	// Zero means 500ms.
	CooldownTimeout time.Duration

	// OnUnavailable says what happens when Redis does not answer in time.
	// Zero means [FailOpen].
	OnUnavailable FailMode

	// FallbackShare is the fraction of every limit that one process may
	// use on its own while Redis is unavailable and the policy is
	// [FailOpen]; set it to about 1/(number of processes). It must be at
	// most 1. Zero means 0.25.
	FallbackShare float64

	// ProbeInterval is how often an unavailable Redis is tried again;
	// decisions in between go straight to the policy, so an outage costs
	// one timeout per interval rather than one per decision. Zero means one
	// second.
	ProbeInterval time.Duration

	// Prefetch, when above 1, takes up to Prefetch tokens per round trip and
	// spends the spare ones locally, for hot boundaries. Zero means no
	// prefetching: one round trip per decision. See [Redis] for the overshoot
	// it allows.
	Prefetch int

	// PrefetchTTL is how long prefetched tokens may be spent. Zero means 100ms.
	PrefetchTTL time.Duration

	// MaxBatch is the most concurrent decisions of one boundary that
	// share a round trip: while one is in flight, arriving requests wait
	// and the next round trip decides all of them, exactly (see [Redis]).
	// Zero means 256; 1 means one round trip per decision. Ignored with
	// Prefetch.
	MaxBatch int

	// Queue, when set, serves a saturated boundary round-robin by owner
	// across the fleet, and Allow waits for its slot (see [FairQueue]).
	// Nil means no queue: Allow never waits. It cannot be combined with
	// Prefetch.
	Queue *FairQueue

	// MaxCooldown caps a single cooldown, so that a hostile or broken
	// Retry-After cannot pause a boundary for days. Zero means five
	// minutes.
	MaxCooldown time.Duration

	// Logger receives one line when Redis becomes unavailable and one
	// when it recovers. Keys and boundaries are never logged. Nil means
	// silent.
	Logger *slog.Logger
}

// Default values for zero RedisConfig fields.
const (
	defaultTimeout         = 50 * time.Millisecond
	defaultCooldownTimeout = 500 * time.Millisecond
	defaultFallbackShare   = 0.25
	defaultProbeInterval   = time.Second
	defaultPrefetchTTL     = 100 * time.Millisecond
)

// Redis is a [Limiter] whose state lives in Redis, shared by every process
// that uses the same Redis and Prefix: a fleet of workers sharing one
// credential shares one limit. It works with any redis.UniversalClient:
// standalone, sentinel (failover) or cluster.
//
// Each round trip runs one Lua script, which reads Redis TIME (the fleet's
// one clock), checks the boundary's cooldown and every limit (and the
// owner's share), and takes a token from all of them or from none, for
// every request coalesced into it (RedisConfig.MaxBatch): concurrent
// decisions of one boundary in one process share a round trip, exactly. The script runs with EVALSHA, falling back to EVAL the
// first time a server lacks it. All keys of a boundary share a hash tag,
// so a cluster keeps them on one slot.
//
// With prefetching (RedisConfig.Prefetch), one round trip takes up to Prefetch
// tokens and the spare ones are spent locally for up to PrefetchTTL. The
// fleet still never spends more tokens than the limit grants, but may
// spend them up to PrefetchTTL late: in any window of length W it sends at
// most what the limit grants in W+PrefetchTTL. Unused prefetched tokens expire
// and are lost, and a cooldown set by another process takes effect here
// within PrefetchTTL.
//
// When Redis fails to answer within Timeout, the decision follows
// OnUnavailable, the failure is logged once, and Redis is probed again
// every ProbeInterval until it answers. Allow waits for Redis at most
// Timeout from its own call, plus the slack of scheduling its goroutine
// (a few milliseconds on a loaded machine), also when its decision is
// coalesced behind a batch already in flight. With the fair queue it may
// in addition sleep for its slot, or for a place and then ask again, never
// past its deadline. A round trip also ends at ctx's deadline, and one
// that the caller's deadline ended never counts against Redis. A
// cancellation without a deadline ends it at once with a client whose
// ContextTimeoutEnabled is false; otherwise (go-redis puts only deadlines
// on the socket) it ends within Timeout. Cooldown waits
// at most CooldownTimeout. Both hold even with a client whose
// ContextTimeoutEnabled is false (the call then waits in a goroutine that
// ends when the client gives up). Nothing here panics.
//
// Redis is safe for concurrent use.
type Redis struct {
	rdb    redis.UniversalClient
	decide *redis.Script
	pause  *redis.Script
	keys   keyspace
	cache  keyCache
	// The boundary's limits and an owner's share (nil without OwnerShare):
	// key suffixes, and the script arguments describing them.
	boundaryKeys []string
	boundaryArgs []any
	ownerKeys    []string
	ownerArgs    []any
	// limits describes each limit in the order of a decision's keys: the
	// boundary's, then the owner's share.
	limits []limitArg

	timeout         time.Duration
	cooldownTimeout time.Duration
	maxCooldown     time.Duration
	policy          FailMode
	prefetch        int
	// detached runs calls in a goroutine because the client would let a
	// stalled socket outlive the context deadline.
	detached bool

	pauses     pauses
	fallback   *Local      // the FailOpen fallback; nil with FailClosed
	prefetched *prefetched // nil without prefetching
	batch      *batcher    // nil without coalescing (with prefetching, or MaxBatch 1)
	health     *redisstore.Tracker

	// now is the clock seam: time.Now except in tests.
	now func() time.Time
	// scriptNow is the scripts' clock seam: nil means Redis TIME.
	scriptNow func() time.Time
}

// limitArg is what the Go side needs of a limit to read a script's reply.
type limitArg struct {
	interval int64 // µs
	reason   int64
}

// scriptClock returns the clock argument of a script: 0 for Redis TIME,
// else the test clock's now in µs.
func (l *Redis) scriptClock() int64 {
	if l.scriptNow == nil {
		return 0
	}
	return l.scriptNow().UnixMicro()
}

// NewRedis returns a Redis limiter using rdb. It fails with
// [ErrNoBoundaryKey] without cfg.BoundaryKey, and with an error wrapping
// [ErrInvalidConfig] when the configuration cannot work. It does not
// contact Redis.
func NewRedis(rdb redis.UniversalClient, cfg RedisConfig) (*Redis, error) {
	prefix, err := redisstore.Setup(rdb, cfg.Prefix, DefaultPrefix)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	ks, err := newKeyspace(prefix, cfg.BoundaryKey)
	if err != nil {
		return nil, err
	}
	bspecs, ospecs, err := groupSpecs("RedisConfig.", cfg.Limits, cfg.OwnerShare)
	if err != nil {
		return nil, err
	}
	fallback := cmp0(cfg.FallbackShare, defaultFallbackShare)
	if !validShare(fallback) {
		return nil, fmt.Errorf("%w (about 1/(number of processes))", errShare("RedisConfig.FallbackShare", fallback))
	}
	if cfg.OnUnavailable != FailOpen && cfg.OnUnavailable != FailClosed {
		return nil, fmt.Errorf("%w: RedisConfig.OnUnavailable is %d: set it to limiter.FailOpen (the zero value) or limiter.FailClosed", ErrInvalidConfig, cfg.OnUnavailable)
	}
	for _, d := range []struct {
		field string
		v     time.Duration
		def   time.Duration
	}{
		{"Timeout", cfg.Timeout, defaultTimeout},
		{"CooldownTimeout", cfg.CooldownTimeout, defaultCooldownTimeout},
		{"ProbeInterval", cfg.ProbeInterval, defaultProbeInterval},
		{"PrefetchTTL", cfg.PrefetchTTL, defaultPrefetchTTL},
		{"MaxCooldown", cfg.MaxCooldown, defaultMaxCooldown},
	} {
		if d.v < 0 {
			return nil, fmt.Errorf("%w: RedisConfig.%s is %v: it must not be negative; zero means %v", ErrInvalidConfig, d.field, d.v, d.def)
		}
	}
	if cfg.Prefetch < 0 {
		return nil, fmt.Errorf("%w: RedisConfig.Prefetch is %d: it must not be negative; zero means no prefetching", ErrInvalidConfig, cfg.Prefetch)
	}

	l := &Redis{
		rdb:             rdb,
		decide:          redis.NewScript(decideLua),
		pause:           redis.NewScript(cooldownLua),
		keys:            ks,
		timeout:         cmp0(cfg.Timeout, defaultTimeout),
		cooldownTimeout: cmp0(cfg.CooldownTimeout, defaultCooldownTimeout),
		maxCooldown:     cmp0(cfg.MaxCooldown, defaultMaxCooldown),
		policy:          cfg.OnUnavailable,
		prefetch:        cfg.Prefetch,
		detached:        !redisstore.HonoursContext(rdb),
		health: redisstore.NewTracker("limiter", cfg.OnUnavailable.String(),
			cmp0(cfg.ProbeInterval, defaultProbeInterval), cfg.Logger),
		now: time.Now,
	}
	for _, s := range bspecs {
		l.boundaryKeys = append(l.boundaryKeys, rateSuffix+s.field())
		l.boundaryArgs = append(l.boundaryArgs, s.interval, s.burst, reasonRate)
		l.limits = append(l.limits, limitArg{interval: s.interval, reason: reasonRate})
	}
	for _, s := range ospecs {
		l.ownerKeys = append(l.ownerKeys, ":"+s.field())
		l.ownerArgs = append(l.ownerArgs, s.interval, s.burst, reasonOwner)
		l.limits = append(l.limits, limitArg{interval: s.interval, reason: reasonOwner})
	}
	if cfg.OnUnavailable == FailOpen {
		// The fallback holds FallbackShare of each limit, and the owner's
		// share of that.
		scaled := make([]Limit, 0, len(cfg.Limits))
		for _, l := range cfg.Limits {
			s := l.scaled(fallback)
			scaled = append(scaled, Limit{Rate: 1, Period: s.duration(), Burst: int(s.burst)})
		}
		if l.fallback, err = NewLocal(LocalConfig{Limits: scaled, OwnerShare: cfg.OwnerShare}); err != nil {
			return nil, err
		}
	}
	if cfg.Prefetch > 1 && len(bspecs) > 0 {
		l.prefetched = newPrefetched(cmp0(cfg.PrefetchTTL, defaultPrefetchTTL))
	}
	if l.batch, err = newBatcher(cfg); err != nil {
		return nil, err
	}
	if l.batch != nil {
		l.batch.run = l.runBatch
		l.batch.timeout = l.timeout
	}
	return l, nil
}

// The reason codes of decide.lua.
const (
	reasonRate     = 1
	reasonOwner    = 2
	reasonCooldown = 3
	// reasonScopeCooldown: the scope the boundary is within is paused
	// (see Within), and its pause ends last.
	reasonScopeCooldown = 5
)

// Allow decides r for the whole fleet. It returns an error only when Redis
// is unavailable and the policy is [FailClosed] (an [*UnavailableError]),
// or when ctx is done. With [FailOpen] its fallback, a [Local], decides a
// new boundary past its cap by its overflow entry (see
// LocalConfig.MaxBoundaries).
func (l *Redis) Allow(ctx context.Context, r Request) (Decision, error) {
	now := l.now()
	if until := l.pauses.until(r.Boundary, now); !until.IsZero() {
		return cooldownDecision(until, now), nil
	}
	lk := prefetchKey{boundary: r.Boundary}
	if l.ownerKeys != nil {
		lk.owner = r.Owner
	}
	if l.prefetched != nil && l.prefetched.take(lk, now) {
		return Decision{Allowed: true}, nil
	}
	if err := ctx.Err(); err != nil {
		return Decision{}, err
	}
	if ok, err := l.health.Attempt(now); !ok {
		return l.unavailable(r, now, err)
	}
	if l.batch != nil {
		return l.allowBatched(ctx, r, now)
	}

	// Without coalescing a decision is for one request, or takes a prefetch.
	want := 1
	if l.prefetched != nil {
		want = l.prefetch
	}
	d, err := l.decideN(ctx, r, want)
	if err != nil {
		if ctxErr := redisstore.CallerDone(ctx); ctxErr != nil {
			// The caller gave up; that says nothing about Redis.
			return Decision{}, ctxErr
		}
		l.health.Failed(l.now(), err)
		return l.unavailable(r, now, err)
	}
	l.health.Succeeded()
	if d.granted > 0 {
		if l.prefetched != nil {
			l.prefetched.put(lk, int(d.granted-1), now)
		}
		return Decision{Allowed: true}, nil
	}
	return l.refusal(r.Boundary, d.wait, d.reason), nil
}

// decideN runs decide.lua for want requests of r's boundary and owner. A
// reply of the wrong shape (a proxy in the way, a foreign script under the
// same SHA) is an error, a store that cannot decide, like a timeout.
func (l *Redis) decideN(ctx context.Context, r Request, want int) (decision, error) {
	keys, args := l.decisionCall(r, want)
	reply, err := l.run(ctx, l.timeout, l.decide, keys, args)
	if err != nil {
		return decision{}, err
	}
	return parseDecision(reply, want, len(keys)-2)
}

// refusal returns the Decision for a script's refusal of a request to
// boundary.
func (l *Redis) refusal(boundary string, wait time.Duration, reason int64) Decision {
	d := Decision{RetryAfter: ceilMicro(wait)}
	switch reason {
	case reasonCooldown, reasonScopeCooldown:
		// Redis read its clock before the reply arrived, so the pause ends
		// at most wait after now; measured from before the call it could
		// end early. Remember it, so this process asks no more until then:
		// a scope's pause under the scope, which every boundary within it
		// reads.
		paused := boundary
		if reason == reasonScopeCooldown {
			paused = Scope(boundary)
		}
		after := l.now()
		d.CooldownUntil = l.pauses.extend(paused, after.Add(wait), after)
		d.Reason = ReasonCooldown
	case reasonOwner:
		d.Reason = ReasonOwner
	case reasonQueue:
		d.Reason = ReasonQueue
	default:
		d.Reason = ReasonRate
	}
	return d
}

// decisionCall returns the keys and arguments of decide.lua for want
// requests of r's boundary and owner.
func (l *Redis) decisionCall(r Request, want int) ([]string, []any) {
	bk := l.cache.get(r.Boundary, l.buildKeys)
	keys := bk.keys
	args := make([]any, 0, 2+len(l.boundaryArgs)+len(l.ownerArgs))
	args = append(args, l.scriptClock(), want)
	args = append(args, l.boundaryArgs...)
	if l.ownerKeys != nil && r.Owner != "" {
		keys = make([]string, len(bk.keys), len(bk.keys)+len(l.ownerKeys))
		copy(keys, bk.keys)
		ownerBase := bk.base + ownerSuffix + l.keys.owner(r.Owner)
		for _, suffix := range l.ownerKeys {
			keys = append(keys, ownerBase+suffix)
		}
		args = append(args, l.ownerArgs...)
	}
	return keys, args
}

// buildKeys returns the cooldown keys (the boundary's and its scope's) and
// the limit keys of boundary.
func (l *Redis) buildKeys(boundary string) boundaryKeys {
	base := l.keys.base(boundary)
	keys := make([]string, 0, 2+len(l.boundaryKeys))
	keys = append(keys, base+cooldownSuffix, l.keys.scopeCooldown(boundary))
	for _, suffix := range l.boundaryKeys {
		keys = append(keys, base+suffix)
	}
	return boundaryKeys{base: base, keys: keys}
}

// unavailable applies the policy to a decision Redis could not make.
func (l *Redis) unavailable(r Request, now time.Time, cause error) (Decision, error) {
	if l.policy == FailClosed {
		return Decision{}, &UnavailableError{Op: "allow", Err: cause}
	}
	d, err := l.fallback.AllowAt(r, now)
	if err != nil {
		return Decision{}, err
	}
	d.Fallback = true
	return d, nil
}

// Cooldown pauses boundary for the whole fleet until the given time,
// capped at MaxCooldown from now, and with it every boundary within it
// (see [Within]). The pause takes effect in this process
// at once, whatever Redis does; the error, an [*UnavailableError], only
// reports that other processes may not have been told.
func (l *Redis) Cooldown(ctx context.Context, boundary string, until time.Time) error {
	now := l.now()
	length := min(until.Sub(now), l.maxCooldown)
	if length <= 0 {
		return nil
	}
	l.pauses.extend(boundary, now.Add(length), now)
	if l.prefetched != nil {
		l.prefetched.drop(boundary)
	}
	if ok, err := l.health.Attempt(now); !ok {
		return &UnavailableError{Op: "cooldown", Err: err}
	}
	keys := l.cache.get(boundary, l.buildKeys).keys[:1]
	// Round up to whole microseconds: a pause must never end early.
	_, err := l.run(ctx, l.cooldownTimeout, l.pause, keys, []any{ceilMicro(length).Microseconds()})
	if err != nil {
		if ctxErr := redisstore.CallerDone(ctx); ctxErr != nil {
			return ctxErr
		}
		l.health.Failed(l.now(), err)
		return &UnavailableError{Op: "cooldown", Err: err}
	}
	l.health.Succeeded()
	return nil
}

// Prepare readies l for its first decision: it connects to Redis and loads
// the limiter's scripts there, waiting as long as ctx lets it (Timeout
// does not apply). Call it at startup, before serving. Without it the
// first decision of a process also dials, says HELLO and, finding no
// script, sends it: four round trips where a decision takes one. On a link
// slower than a quarter of Timeout that decision fails, and Redis then
// counts as unavailable for a ProbeInterval, refusing every decision when
// failing closed. On success Redis counts as available; the error is an
// [*UnavailableError] with Op "prepare", and Prepare may be called again.
func (l *Redis) Prepare(ctx context.Context) error {
	scripts := []*redis.Script{l.decide, l.pause}
	if l.batch != nil && l.batch.queue != nil {
		scripts = append(scripts, l.batch.queue.script)
	}
	for _, s := range scripts {
		load := func(ctx context.Context) (string, error) { return s.Load(ctx, l.rdb).Result() }
		var err error
		if l.detached {
			_, err = redisstore.Detach(ctx, load)
		} else {
			_, err = load(ctx)
		}
		if err != nil {
			return &UnavailableError{Op: "prepare", Err: err}
		}
	}
	l.health.Succeeded()
	return nil
}

// run runs script, giving up after timeout.
func (l *Redis) run(ctx context.Context, timeout time.Duration, s *redis.Script, keys []string, args []any) (any, error) {
	return redisstore.RoundTrip(ctx, timeout, l.detached, func(ctx context.Context) (any, error) {
		return s.Run(ctx, l.rdb, keys, args...).Result()
	})
}
