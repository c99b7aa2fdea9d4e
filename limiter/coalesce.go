package limiter

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"
)

// defaultMaxBatch is the most decisions one round trip makes when
// RedisConfig.MaxBatch is zero: far above the concurrency of one process on
// one boundary, and small enough that one script run stays short.
const defaultMaxBatch = 256

// slotRequest is one request's part of a batch.
type slotRequest struct {
	// maxWait is how long the request may wait for a slot; zero means it
	// is sent now or not at all. A non-zero deadline replaces it.
	maxWait time.Duration
	// deadline, when not zero, is the latest a slot may come: the batch
	// that carries the request sends what is left of it then, so time
	// spent waiting for the batch is not counted twice.
	deadline time.Time
	// owner is the owner's field in the fair queue; empty without it.
	owner string
	// weight is the number of slots the owner may hold ahead of now.
	weight int
}

// slotResult is the decision of one request of a batch.
type slotResult struct {
	granted bool
	// wait: granted, until the slot; refused, until the request's place.
	wait time.Duration
	// retry is, when refused, how long until asking again can change the
	// answer.
	retry  time.Duration
	reason int64
	// depth is the number of slots the owner holds ahead of now.
	depth int
}

// The reason code queue.lua adds to decide.lua's: the owner already holds
// every slot its weight allows.
const reasonQueue = 4

// coalescer makes concurrent decisions for one boundary share a round
// trip. The first caller leads: it runs a batch of one at once, in its own
// goroutine. Callers that arrive while a batch is in flight wait; when it
// returns, a driver goroutine takes every waiter (up to max, one per owner
// in turn) as the next
// batch and runs round trips back to back, each for the callers that
// arrived during the one before or came back right after it (see gather),
// until none is waiting. So there is at most one round trip in flight per
// group, a lone caller pays exactly one round trip and no goroutine, and n
// concurrent callers pay about two for all of them.
type coalescer struct {
	// mu guards groups and every group's waiting callers.
	mu sync.Mutex
	// groups holds a group while a round trip for it is in flight.
	groups map[groupKey]*group
	// spare is an ended group kept for the next, so that a lone caller's
	// decisions allocate none.
	spare *group

	max int // immutable: the most requests in one batch
	// timeout bounds how long a caller waits for its decision, from its
	// own call; immutable. It is the round trip's timeout, so a lone
	// caller and a batch's leader are bounded by the round trip itself.
	timeout time.Duration
}

// groupKey names the requests that can share a round trip: one boundary,
// and one owner when the owner's share adds keys of its own.
type groupKey struct{ boundary, owner string }

// group holds the callers waiting for a group's next batch, one queue per
// owner, taken round-robin: an owner with thousands of requests waiting
// cannot push another owner's one out of the batches that the fair queue
// decides (it would then see the flooding owner as alone).
type group struct {
	// n is the number of callers waiting, in all queues.
	n int
	// queues maps an owner (slotRequest.owner) to its waiting callers.
	queues map[string]*ownerQueue
	// turn holds the owners with callers waiting in round-robin order;
	// it may also hold queues emptied by withdraw, skipped when reached.
	turn []*ownerQueue
}

// ownerQueue is one owner's waiting callers, first come first.
type ownerQueue struct {
	owner   string
	waiting []*pending
}

// add queues p behind its owner's other waiting callers.
func (g *group) add(p *pending) {
	q := g.queues[p.in.owner]
	if q == nil {
		if g.queues == nil {
			g.queues = make(map[string]*ownerQueue)
		}
		q = &ownerQueue{owner: p.in.owner}
		g.queues[q.owner] = q
		g.turn = append(g.turn, q)
	}
	q.waiting = append(q.waiting, p)
	g.n++
}

// remove takes p out of its owner's queue, reporting whether it was there.
func (g *group) remove(p *pending) bool {
	q := g.queues[p.in.owner]
	if q == nil {
		return false
	}
	i := slices.Index(q.waiting, p)
	if i < 0 {
		return false
	}
	q.waiting = slices.Delete(q.waiting, i, i+1)
	g.n--
	if len(q.waiting) == 0 {
		delete(g.queues, q.owner)
	}
	return true
}

// take removes up to max callers, one per owner in turn, so that every
// owner with a caller waiting has one in the batch before any has two.
func (g *group) take(max int) []*pending {
	batch := make([]*pending, 0, min(g.n, max))
	for len(batch) < max && g.n > 0 {
		q := g.turn[0]
		g.turn[0] = nil
		g.turn = g.turn[1:]
		if len(q.waiting) == 0 {
			continue // withdrawn
		}
		batch = append(batch, q.waiting[0])
		q.waiting[0] = nil
		q.waiting = q.waiting[1:]
		g.n--
		if len(q.waiting) > 0 {
			g.turn = append(g.turn, q)
		} else {
			delete(g.queues, q.owner)
		}
	}
	return batch
}

// reset empties g for reuse.
func (g *group) reset() {
	g.n = 0
	clear(g.queues)
	clear(g.turn)
	g.turn = g.turn[:0]
}

// pending is one caller's request in a coalescer.
type pending struct {
	in slotRequest
	// ctx is the caller's context, whose values (a trace, say) the round
	// trip of its batch carries when the caller is the batch's first.
	ctx context.Context
	// done is closed when out and err are set.
	done chan struct{}
	out  slotResult
	err  error
}

// runBatch makes the decisions of one batch in one round trip.
type runBatch func(ctx context.Context, k groupKey, ins []slotRequest) ([]slotResult, error)

// decide returns in's decision, made in a round trip shared with the other
// callers of group k. A caller never waits longer than the timeout from
// its own call, whether it leads a batch (the round trip is bounded by
// it), waits for a batch behind one in flight, or was taken into a batch
// that is in flight: past the timeout it leaves with an error wrapping
// context.DeadlineExceeded, and the answer its batch brings later, if any,
// is dropped (a slot it held is lost, which only costs throughput). When
// ctx ends first, a caller that waits returns ctx.Err() at once, taking
// nothing. A leader's round trip carries only its own request and runs
// under ctx: it ends at ctx's deadline, and at a cancellation when the
// client is detached (see Redis), else when the round trip ends.
func (c *coalescer) decide(ctx context.Context, k groupKey, in slotRequest, run runBatch) (slotResult, error) {
	c.mu.Lock()
	g, busy := c.groups[k]
	if !busy {
		if c.groups == nil {
			c.groups = make(map[groupKey]*group)
		}
		g, c.spare = c.spare, nil
		if g == nil {
			g = &group{}
		}
		c.groups[k] = g
		c.mu.Unlock()
		// The leader's batch holds its own request alone, so its round
		// trip ends with its context (run bounds it by the timeout too).
		// The callers that arrive meanwhile wait for the next batch,
		// which goes on either way.
		outs, err := run(ctx, k, []slotRequest{in})
		if next := c.next(k); next != nil {
			go c.drive(k, next, run)
		}
		if err != nil {
			return slotResult{}, err
		}
		return outs[0], nil
	}
	p := &pending{in: in, ctx: ctx, done: make(chan struct{})}
	g.add(p)
	c.mu.Unlock()

	// A caller behind a batch in flight would otherwise wait for that
	// round trip and then its own: twice the timeout on a hung Redis.
	timer := time.NewTimer(c.timeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return p.out, p.err
	case <-ctx.Done():
		c.withdraw(g, p)
		return slotResult{}, ctx.Err()
	case <-timer.C:
		c.withdraw(g, p)
		return slotResult{}, fmt.Errorf("limiter: no decision within %v: %w (%w)", c.timeout, context.DeadlineExceeded, errWaitedInProcess)
	}
}

// errWaitedInProcess marks a caller that gave up waiting in this process
// for a batch's round trip, by its own timer: the round trips themselves
// report how Redis answered (a lone leader's, and a batch's to the
// callers still in it), so this says nothing about Redis. A process
// crowded by one tenant's flood times its waiters out with Redis healthy.
var errWaitedInProcess = errors.New("waited in this process for a shared round trip")

// withdraw takes p out of g's waiting callers if it is still there. Once
// its batch is in flight p stays in it, and the driver's answer goes
// unread.
func (c *coalescer) withdraw(g *group, p *pending) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g.remove(p)
}

// drive runs the batches of group k back to back, starting with batch,
// until no caller is waiting. After each round trip it wakes the batch's
// callers and lets them ask again before it takes the next batch (see
// gather): a group commit, without a timer.
func (c *coalescer) drive(k groupKey, batch []*pending, run runBatch) {
	for {
		// The batch carries its first caller's values, not its
		// cancellation: the others depend on the round trip.
		back := c.runAndDeliver(context.WithoutCancel(batch[0].ctx), k, batch, run)
		c.gather(k, back)
		if batch = c.next(k); batch == nil {
			return
		}
	}
}

// maxGatherYields bounds how many times gather yields per round trip: a
// few yields are enough for the callers just woken to run on a small
// machine's processors, and a waiting batch is held back by at most that
// many turns of the scheduler (under CPU saturation, each is a whole
// round of the runnable goroutines).
const maxGatherYields = 4

// gather yields to the callers just woken, so that those ready to ask
// again join the next batch instead of waiting a whole round trip for the
// one after. It yields until want callers of group k are waiting (those
// that waited already when the batch was delivered, plus the batch's own),
// or a yield brought none more, at most maxGatherYields times. Only the
// group's driver calls it, so the group exists throughout.
func (c *coalescer) gather(k groupKey, want int) {
	// The first yield may only start the woken callers, so the check for
	// a yield that brought none begins with the second.
	last := -1
	for range maxGatherYields {
		runtime.Gosched()
		n := c.waitingIn(k)
		if n >= want || n == last {
			return
		}
		last = n
	}
}

// waitingIn returns the number of callers waiting for group k's next
// batch; zero when the group has ended.
func (c *coalescer) waitingIn(k groupKey) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g, ok := c.groups[k]; ok {
		return g.n
	}
	return 0
}

// runAndDeliver runs batch and hands every caller its result. It returns
// the number of callers waiting once all of them are back: those waiting
// before any was answered, plus the batch's own.
func (c *coalescer) runAndDeliver(ctx context.Context, k groupKey, batch []*pending, run runBatch) int {
	ins := make([]slotRequest, len(batch))
	for i, p := range batch {
		ins[i] = p.in
	}
	outs, err := run(ctx, k, ins)
	// Counted before the first answer, so that a caller quick to ask
	// again is not counted twice.
	back := c.waitingIn(k) + len(batch)
	for i, p := range batch {
		p.err = err
		if err == nil {
			p.out = outs[i]
		}
		close(p.done)
	}
	return back
}

// next takes up to max waiting callers of group k as its next batch, one
// per owner in turn (see group), or ends the group when none is waiting.
func (c *coalescer) next(k groupKey) []*pending {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[k]
	if g.n == 0 {
		delete(c.groups, k)
		g.reset()
		c.spare = g
		return nil
	}
	return g.take(c.max)
}

// runBatch decides the requests ins of group k in one round trip. Without
// the fair queue every request is sent now or not at all, so decide.lua
// decides them all from a count, however many there are (its reply does
// not grow with them either); the fair queue needs queue.lua, which
// reserves a slot per request.
func (l *Redis) runBatch(ctx context.Context, k groupKey, ins []slotRequest) ([]slotResult, error) {
	r := Request{Boundary: k.boundary, Owner: k.owner}
	if l.batch.queue == nil {
		return l.runCount(ctx, r, len(ins))
	}
	// decisionCall gives the cooldown keys (the boundary's and its
	// scope's), then every limit's key (the boundary's, then the owner's
	// share), and after the clock and want their triples.
	keys, limitArgs := l.decisionCall(r, 0)
	limitArgs = limitArgs[2:]
	q := l.batch.queue
	base := l.cache.get(k.boundary, l.buildKeys).base
	keys = append(keys[:len(keys):len(keys)], base+queueSlotsSuffix, base+queueLatestSuffix)
	args := make([]any, 0, 4+len(limitArgs)+3*len(ins))
	args = append(args, l.scriptClock(), len(limitArgs)/3, q.lookahead.Microseconds())
	args = append(args, limitArgs...)
	args = append(args, len(ins))
	now := l.now()
	for _, in := range ins {
		wait := in.maxWait
		if !in.deadline.IsZero() {
			wait = max(in.deadline.Sub(now), 0)
		}
		args = append(args, wait.Microseconds(), in.owner, in.weight)
	}
	reply, err := l.run(ctx, l.timeout, l.batch.queue.script, keys, args)
	if err != nil {
		return nil, err
	}
	return parseBatch(reply, len(ins))
}

// runCount decides n requests of r's boundary and owner that may not
// wait, with decide.lua: the first it grants are granted, and each refused
// one is told its own place.
func (l *Redis) runCount(ctx context.Context, r Request, n int) ([]slotResult, error) {
	d, err := l.decideN(ctx, r, n)
	if err != nil {
		return nil, err
	}
	outs := make([]slotResult, n)
	limits := l.limits[:len(d.next)]
	for j := range outs {
		if int64(j) < d.granted {
			outs[j].granted = true
			continue
		}
		wait, reason := d.place(j-int(d.granted), limits)
		outs[j] = slotResult{wait: wait, retry: wait, reason: reason}
	}
	return outs, nil
}

// parseBatch reads queue.lua's reply: Redis's now in µs, which the
// decisions do not need (every wait is relative to it already), then five
// integers per request, or nothing more when every request was granted
// now with no slot of its owner ahead.
func parseBatch(v any, n int) ([]slotResult, error) {
	vals, ok := v.([]any)
	if ok && len(vals) == 1 {
		outs := make([]slotResult, n)
		for j := range outs {
			outs[j].granted = true
		}
		return outs, nil
	}
	if !ok || len(vals) != 1+5*n {
		return nil, fmt.Errorf("%w: batch of %d: %v", errReply, n, v)
	}
	ints := make([]int64, len(vals))
	for i, x := range vals {
		if ints[i], ok = x.(int64); !ok {
			return nil, fmt.Errorf("%w: %v", errReply, v)
		}
	}
	outs := make([]slotResult, n)
	for j := range outs {
		r := ints[1+5*j : 6+5*j]
		if r[0] < 0 || r[0] > 1 || r[1] < 0 || r[1] > maxWaitMicros || r[2] < 0 || r[2] > maxWaitMicros ||
			r[3] < 0 || r[3] > reasonScopeCooldown || r[4] < 0 || r[4] > maxDepth {
			return nil, fmt.Errorf("%w: request %d: %v", errReply, j, r)
		}
		outs[j] = slotResult{
			granted: r[0] == 1,
			wait:    time.Duration(r[1]) * time.Microsecond,
			retry:   time.Duration(r[2]) * time.Microsecond,
			reason:  r[3],
			depth:   int(r[4]),
		}
	}
	return outs, nil
}

// maxDepth bounds the slots one owner can hold: its weight, which
// NewRedis caps at this.
const maxDepth = 1 << 20

// inFlight reports whether group k has a round trip in flight, for tests.
func (c *coalescer) inFlight(k groupKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.groups[k]
	return ok
}
