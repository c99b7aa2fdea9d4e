package budget

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/internal/keyedhash"
	"github.com/retrybudget/retrybudget/internal/redisstore"
)

// Redis is a [Budget] counted in Redis, shared by every
// process that uses the same Redis, Prefix and rule: a fleet calling one
// provider gets one budget for it, so the floor of retries per second and
// the percentage hold for the fleet rather than for each process. It works
// with any redis.UniversalClient: standalone, sentinel (failover) or
// cluster.
//
// Each destination is one Redis hash, named by a hash of the destination
// inside a cluster hash tag, holding per-slot counts of the window and the
// floor bucket; it expires two windows after its last use. A Withdraw is
// one round trip running one Lua script, which reads Redis TIME (the
// fleet's one clock), credits this process's pending deposits, and checks
// and spends the retry atomically. The script runs with EVALSHA, falling
// back to EVAL the first time a server lacks it.
//
// Deposits are counted in the process and sent in batches: with the next
// Withdraw to the destination, or by the first Deposit at least
// FlushInterval after the last round trip (only one caller sends; the
// others go on at once). A process's first attempts therefore credit the
// fleet's budget up to FlushInterval late. The lag mostly withholds
// credit, refusing retries the exact rule would allow until it arrives;
// since a process sends its own pending deposits before its own retry, its
// retries are never starved of its own traffic. The one way the lag errs
// towards allowing is at the window's far edge: a deposit credited late
// also leaves the window up to FlushInterval late. Deposits left pending
// for about a window or more (an idle destination) are dropped rather
// than credited late.
//
// When Redis does not answer within Timeout (or a cluster node is
// unreachable), the decision follows OnUnavailable with Fallback set, the
// outage is logged once, and Redis is probed again every ProbeInterval
// until it answers, which is logged once too. Withdraw and Deposit never
// panic and never block longer than about Timeout, even with a client
// whose ContextTimeoutEnabled is false. Deposits made while Redis is down
// are counted only by the fail-open fallback.
//
// Redis is safe for concurrent use. It starts no goroutine except, with a
// client whose ContextTimeoutEnabled is false, one per round trip that ends
// when the client gives up on the command.
type Redis struct {
	rdb    redis.UniversalClient
	script *script
	dests  *pendings

	timeout time.Duration
	// flushEvery is FlushInterval in nanoseconds; 0 sends every deposit.
	flushEvery int64
	// stale is the window in nanoseconds: pending deposits older than it
	// are dropped, not credited late.
	stale  int64
	policy FailMode
	// detached runs round trips in a goroutine because the client would
	// let a stalled socket outlive the context deadline.
	detached bool

	// local is the FailOpen fallback, fed with every deposit; nil when
	// failing closed.
	local  *Local
	health *redisstore.Tracker

	// now is the clock seam for the process-side decisions (flushing,
	// probing, the fallback): time.Now except in tests. Budget windows
	// themselves run on Redis TIME.
	now func() time.Time
}

// NewRedis returns a Redis budget using rdb, with cfg's zero fields
// defaulted. It fails with an error wrapping [ErrInvalidConfig] for a nil
// client (or a nil *redis.Client, *redis.ClusterClient or *redis.Ring) and
// for a Prefix holding '{' or '}'. It does not contact Redis.
func NewRedis(rdb redis.UniversalClient, cfg RedisConfig) (*Redis, error) {
	prefix, err := redisstore.Setup(rdb, cfg.Prefix, DefaultPrefix)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if len(cfg.DestinationKey) == 0 {
		return nil, fmt.Errorf("%w: set RedisConfig.DestinationKey to 32 random bytes (RETRYBUDGET_DESTINATION_KEY, base64), the same on every process", ErrNoDestinationKey)
	}
	keyed, err := keyedhash.New(cfg.DestinationKey)
	if err != nil {
		return nil, fmt.Errorf("%w: RedisConfig.DestinationKey is %d bytes: set it to 32 random bytes (RETRYBUDGET_DESTINATION_KEY, base64), at least 16: %w", ErrInvalidConfig, len(cfg.DestinationKey), err)
	}
	r := cfg.Config.Rule()
	flush := cfg.FlushInterval
	switch {
	case flush == 0:
		flush = DefaultFlushInterval
	case flush < 0:
		flush = 0
	}
	policy := cfg.OnUnavailable
	if policy != FailClosed {
		policy = FailOpen
	}
	b := &Redis{
		rdb:        rdb,
		script:     newScript(r),
		dests:      newPendings(keyed, rulePrefix(prefix, r.Window)),
		timeout:    orDefault(cfg.Timeout, DefaultTimeout),
		flushEvery: int64(flush),
		stale:      int64(r.Window),
		policy:     policy,
		detached:   !redisstore.HonoursContext(rdb),
		health: redisstore.NewTracker("budget", policy.String(),
			orDefault(cfg.ProbeInterval, DefaultProbeInterval), cfg.Logger),
		now: time.Now,
	}
	if policy == FailOpen {
		// The caller's config, not r: Local reads a zero field as
		// its default, where r's zeros mean none.
		b.local = NewLocal(cfg.Config)
	}
	return b, nil
}

// Deposit implements [Budget]. It counts the first attempt in
// this process and, at most once per FlushInterval per destination, sends
// the deposits counted so far; only that call waits for Redis, at most
// Timeout.
func (b *Redis) Deposit(ctx context.Context, dest string) {
	now := b.now()
	if b.local != nil {
		b.local.depositAt(dest, now)
	}
	p := b.dests.get(dest, now)
	at := now.UnixNano()
	if b.health.Down() {
		// While Redis is down nothing piles up: the fallback has counted
		// this deposit. Once per probe interval, a deposit checks whether
		// Redis is back, so destinations that never retry recover too.
		if ok, _ := b.health.Attempt(now); ok {
			p.n.Store(0)
			p.sent.Store(at)
			b.send(ctx, p.key, 1, false)
		}
		return
	}
	p.n.Add(1)
	last := p.sent.Load()
	if at-last < b.flushEvery || !p.sent.CompareAndSwap(last, at) {
		return
	}
	n := p.n.Swap(0)
	if at-last > b.stale {
		// All but this deposit came before the last window started,
		// or within a flush interval of it; crediting them now would
		// stretch their life by a window.
		n = 1
	}
	if n > 0 {
		b.send(ctx, p.key, n, false)
	}
}

// Withdraw implements [Budget]. It sends this process's pending
// deposits to dest and decides the retry in one round trip, waiting at
// most Timeout; when Redis is unavailable the decision follows
// OnUnavailable and is marked Fallback.
func (b *Redis) Withdraw(ctx context.Context, dest string) Decision {
	now := b.now()
	p := b.dests.get(dest, now)
	if ok, _ := b.health.Attempt(now); !ok {
		p.n.Store(0)
		return b.fallback(dest, now)
	}
	at := now.UnixNano()
	n := p.n.Swap(0)
	if last := p.sent.Swap(at); at-last > b.stale {
		// The same rule as Deposit's: deposits pending since before the
		// window began are dropped, not credited now, or a burst of calls
		// that all hang past the window would fund its own retries.
		n = 0
	}
	r, ok := b.send(ctx, p.key, n, true)
	if !ok {
		return b.fallback(dest, now)
	}
	return Decision{Allowed: r.allowed, Deposits: r.deposits, Retries: r.retries}
}

// send runs one round trip bounded by the timeout and records its success
// or failure. Deposits of a failed round trip are lost: the script may or
// may not have credited them, and losing them only makes the budget
// stricter.
func (b *Redis) send(ctx context.Context, key string, credit int64, withdraw bool) (reply, bool) {
	r, err := b.roundTrip(ctx, key, credit, withdraw)
	if err != nil {
		// A caller that gave up says nothing about Redis.
		if redisstore.CallerDone(ctx) == nil {
			b.health.Failed(b.now(), err)
		}
		return reply{}, false
	}
	b.health.Succeeded()
	return r, true
}

// fallback is the decision of OnUnavailable for a retry to dest at now.
func (b *Redis) fallback(dest string, now time.Time) Decision {
	if b.local == nil {
		return Decision{Fallback: true}
	}
	d := b.local.withdrawAt(dest, now)
	d.Fallback = true
	return d
}

// roundTrip runs the script with a deadline of b.timeout.
func (b *Redis) roundTrip(ctx context.Context, key string, credit int64, withdraw bool) (reply, error) {
	return redisstore.RoundTrip(ctx, b.timeout, b.detached, func(ctx context.Context) (reply, error) {
		return b.script.call(ctx, b.rdb, key, credit, withdraw)
	})
}
