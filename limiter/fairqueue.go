package limiter

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/internal/ctxsleep"
	"github.com/retrybudget/retrybudget/internal/redisstore"
)

// FairQueue configures the fleet-wide fair queue of a [Redis] limiter
// (RedisConfig.Queue).
//
// Without a queue, a saturated boundary goes to whoever asks first, so an
// owner (tenant) with 64 waiting requests gets 32 times the share of one
// with 2. With it, a request that finds no token reserves a slot (a token
// due later) and Allow sleeps until it, and each owner may hold at most its
// weight of slots ahead of now: while the boundary is saturated, owners
// that keep asking are served round-robin, each getting its weight of
// slots per round whatever its number of waiting requests. The queue is
// work-conserving: an owner alone gets every slot, and a slot nobody holds
// goes to the next asker. A request whose slot would come after its
// deadline (the context's, or MaxWait) takes nothing and returns at once,
// refused, with RetryAfter the estimated wait for its place. The wait is
// counted from when the request's batch is sent and the slot from when the
// reply is back, so a slow Redis never makes Allow sleep past the
// deadline: a slot that turns out to come after it is refused the same way
// (and lost, which only costs throughput). A slot is never sent inside a
// cooldown: the script grants none while one is in force, and a request
// that slept to its slot checks this process's pauses when it wakes,
// which hold a cooldown set here and one set elsewhere that any request of
// this process has since heard from Redis; it is then refused for the
// cooldown. Within a process, the requests that wait to share a round
// trip are batched one per owner in turn, so an owner with thousands of
// requests in flight cannot keep another's out of the script's sight, and
// an owner's requests refused for holding all its slots come back one
// round apart, not all at its next slot. An owner alone
// may hold slots up to Lookahead ahead, beyond its weight. The queue needs
// Redis 6.2 or later (its script reads owners with ZMSCORE).
type FairQueue struct {
	// Weights gives an owner (Request.Owner) that many slots per round,
	// instead of one. Every process of the fleet must use the same
	// weights. Nil means every owner has weight 1; a weight must be at
	// least 1.
	Weights map[string]int

	// MaxWait bounds how long Allow waits for a slot, when the context's
	// deadline is later or absent. Zero means 10 seconds.
	MaxWait time.Duration

	// Lookahead is how far ahead an owner alone on the boundary may hold
	// slots beyond its weight, so that the boundary stays busy while the
	// owner's requests come back for their next slot; another owner
	// waits at most this long behind them. Zero means 50ms.
	Lookahead time.Duration
}

// Defaults of zero FairQueue fields.
const (
	defaultQueueMaxWait   = 10 * time.Second
	defaultQueueLookahead = 50 * time.Millisecond
)

// queueLua decides several requests of one boundary in the fair queue;
// see the comments at its top.
//
//go:embed queue.lua
var queueLua string

// Key suffixes of the fair queue after a boundary's key base: the hash of
// each owner's slots, and the sorted set of each owner's latest slot (see
// queue.lua).
const (
	queueSlotsSuffix  = "qh"
	queueLatestSuffix = "qz"
)

// batcher holds what a [Redis] limiter needs to coalesce decisions and,
// optionally, queue them fairly.
type batcher struct {
	coalescer
	queue *fairQueue // nil without the fair queue
	// run is the limiter's runBatch, bound once rather than per decision.
	run runBatch

	// sleep is the waiting seam: ctxsleep.Sleep except in tests.
	sleep func(ctx context.Context, d time.Duration) error
}

// fairQueue is the immutable configuration of the fair queue, plus the
// count of this process's requests waiting for a place.
type fairQueue struct {
	// mu guards waiting.
	mu      sync.Mutex
	waiting map[string]int // owner -> requests of this process waiting for a place

	script    *redis.Script // queue.lua
	weights   map[string]int
	maxWait   time.Duration
	lookahead time.Duration
}

// newBatcher validates the batching and queue settings of cfg and returns
// the batcher, or nil when decisions are not batched: with prefetching, or
// with MaxBatch 1 and no queue.
func newBatcher(cfg RedisConfig) (*batcher, error) {
	if cfg.MaxBatch < 0 {
		return nil, fmt.Errorf("%w: RedisConfig.MaxBatch is %d: it must not be negative; zero means %d", ErrInvalidConfig, cfg.MaxBatch, defaultMaxBatch)
	}
	if cfg.Queue != nil && cfg.Prefetch > 1 {
		return nil, fmt.Errorf("%w: RedisConfig.Queue and RedisConfig.Prefetch cannot be combined, since a prefetched token skips the queue: set Prefetch to 0 or Queue to nil", ErrInvalidConfig)
	}
	if cfg.Prefetch > 1 || (cfg.MaxBatch == 1 && cfg.Queue == nil) {
		return nil, nil
	}
	b := &batcher{
		coalescer: coalescer{max: cmp0(cfg.MaxBatch, defaultMaxBatch)},
		sleep:     ctxsleep.Sleep,
	}
	if q := cfg.Queue; q != nil {
		if q.MaxWait < 0 {
			return nil, fmt.Errorf("%w: RedisConfig.Queue: FairQueue.MaxWait is %v: it must not be negative; zero means %v", ErrInvalidConfig, q.MaxWait, defaultQueueMaxWait)
		}
		if q.Lookahead < 0 {
			return nil, fmt.Errorf("%w: RedisConfig.Queue: FairQueue.Lookahead is %v: it must not be negative; zero means %v", ErrInvalidConfig, q.Lookahead, defaultQueueLookahead)
		}
		for owner, w := range q.Weights {
			if w < 1 || w > maxDepth {
				return nil, fmt.Errorf("%w: RedisConfig.Queue: FairQueue.Weights[%q] is %d: set it between 1 and %d, such as 2 for twice an owner's default share", ErrInvalidConfig, owner, w, maxDepth)
			}
		}
		b.queue = &fairQueue{
			script:    redis.NewScript(queueLua),
			waiting:   make(map[string]int),
			weights:   q.Weights,
			maxWait:   cmp0(q.MaxWait, defaultQueueMaxWait),
			lookahead: cmp0(q.Lookahead, defaultQueueLookahead),
		}
	}
	return b, nil
}

// allowBatched decides r through the coalescer and, with the fair queue,
// waits for its slot.
func (l *Redis) allowBatched(ctx context.Context, r Request, now time.Time) (Decision, error) {
	b := l.batch
	k := groupKey{boundary: r.Boundary}
	if l.ownerKeys != nil {
		k.owner = r.Owner
	}
	var in slotRequest
	q := b.queue
	if q != nil {
		in.owner, in.weight = l.keys.owner(r.Owner), q.weight(r.Owner)
		in.deadline = now.Add(q.maxWait)
		if dl, ok := ctx.Deadline(); ok && dl.Before(in.deadline) {
			in.deadline = dl
		}
	}
	var waited time.Duration // slept inside Allow, for Decision.Waited
	for {
		res, err := b.decide(ctx, k, in, b.run)
		if ctxErr := redisstore.CallerDone(ctx); ctxErr != nil {
			// The caller gave up; that says nothing about Redis. A slot
			// it was given is lost, which only ever costs throughput.
			return Decision{}, ctxErr
		}
		if err != nil {
			if !errors.Is(err, errWaitedInProcess) {
				l.health.Failed(l.now(), err)
			}
			return l.unavailable(r, now, err)
		}
		l.health.Succeeded()
		// Redis measured the wait from its own clock, somewhere in the
		// round trip: count it from the reply, so the slot is never early,
		// and never sleep past the deadline for one.
		now = l.now()
		switch {
		case q != nil && res.granted && res.wait > 0 && now.Add(res.wait).After(in.deadline):
			// The slot is lost, which only costs throughput; the caller
			// learns when to come back instead of timing out asleep.
			d := Decision{RetryAfter: ceilMicro(res.wait), Reason: ReasonRate}
			d.QueueDepth = res.depth + q.waitingFor(r.Owner)
			return d, nil
		case res.granted:
			if res.wait > 0 {
				if err := b.sleep(ctx, res.wait); err != nil {
					return Decision{}, err
				}
				waited += res.wait
				// The script granted the slot outside any cooldown, but one
				// may have begun while this request slept: set here, or
				// heard from Redis by another request of this process.
				if d, paused := l.paused(r.Boundary); paused {
					return d, nil
				}
			}
			d := Decision{Allowed: true, Waited: waited}
			if q != nil {
				d.QueueDepth = res.depth + q.waitingFor(r.Owner)
			}
			return d, nil
		case res.reason == reasonQueue && now.Add(res.retry).Before(in.deadline):
			// The owner holds all its slots; one frees at the first of
			// them. Wait for it here, counted as waiting for a place.
			q.add(r.Owner, 1)
			err := b.sleep(ctx, res.retry)
			q.add(r.Owner, -1)
			if err != nil {
				return Decision{}, err
			}
			waited += res.retry
			if d, paused := l.paused(r.Boundary); paused {
				return d, nil
			}
			continue
		}
		d := l.refusal(r.Boundary, res.wait, res.reason)
		if q != nil {
			d.QueueDepth = res.depth + q.waitingFor(r.Owner)
		}
		return d, nil
	}
}

// paused returns the refusal of a request to boundary when this process
// knows of a cooldown in force now. It costs no round trip: a cooldown set
// by another process reaches it through any request of this process that
// the script refuses for it.
func (l *Redis) paused(boundary string) (Decision, bool) {
	now := l.now()
	if until := l.pauses.until(boundary, now); !until.IsZero() {
		return cooldownDecision(until, now), true
	}
	return Decision{}, false
}

// weight returns owner's weight.
func (q *fairQueue) weight(owner string) int {
	if w, ok := q.weights[owner]; ok {
		return w
	}
	return 1
}

// add changes the count of owner's requests waiting for a place.
func (q *fairQueue) add(owner string, n int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.waiting[owner] += n; q.waiting[owner] <= 0 {
		delete(q.waiting, owner)
	}
}

// waitingFor returns the number of owner's requests of this process
// waiting for a place.
func (q *fairQueue) waitingFor(owner string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.waiting[owner]
}
