// Package groupcommit makes the store calls of concurrent callers share
// round trips, as a database's group commit shares a flush: the first
// caller goes at once, alone, and callers arriving while a round trip is in
// flight join the next one, which goes as soon as the one in flight is
// back. There is no timer waiting for a batch to fill, so a lone caller
// pays exactly what it paid without batching.
//
// The ledger's Redis and PostgreSQL stores use it; each decides what one
// item is and how a batch of them makes its round trip.
package groupcommit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMax is the most calls one batch carries when a store's MaxBatch
// is zero: above the concurrency one process usually has in flight, and
// small enough that one batch's round trip stays short.
const DefaultMax = 64

// Batcher shares round trips between the concurrent calls of one store.
// At most one round trip made for it is in flight at a time: the lone
// caller's own (see Do), or a batch of callers that waited.
//
// Items carry their own inputs and results: RunBatch writes each item's
// result into it before returning, and Do's caller reads it only when Do
// returned nil.
type Batcher[T any] struct {
	// mu guards busy and waiting.
	mu sync.Mutex
	// busy reports that a round trip is in flight: a lone caller's, or a
	// driver's, which runs batches until none is waiting.
	busy bool
	// waiting holds the callers for the next batch, first come first.
	waiting []*call[T]

	// max is the most items in one batch; at least 1. Immutable.
	max int
	// timeout bounds a caller's wait from its own call (zero: only its
	// context bounds it). Immutable.
	timeout time.Duration
	// run makes one batch's round trip and writes every item's result.
	// It is called on the driver's goroutine, never concurrently with
	// itself. Immutable.
	run func(ctx context.Context, items []T)

	// shared counts the items that went in a batch of two or more.
	shared atomic.Int64
	// batches counts the batches of two or more.
	batches atomic.Int64
}

// New returns a Batcher whose batches carry at most size items (at least
// 1), each made by run. timeout bounds each caller's wait from its call
// (the store's own bound on a call, such as pgledger's Config.Timeout);
// zero means only the caller's context does.
func New[T any](size int, timeout time.Duration, run func(ctx context.Context, items []T)) *Batcher[T] {
	return &Batcher[T]{max: max(size, 1), timeout: timeout, run: run}
}

// call is one caller's item waiting in, or carried by, a batch.
type call[T any] struct {
	item T
	// ctx is the caller's context bounded by the Batcher's timeout; the
	// batch carrying the call runs until the latest deadline among its
	// calls, so that no caller's own bound is cut short by another's.
	ctx context.Context
	// done is closed once run has written the item's result.
	done chan struct{}
}

// Do runs item. When no round trip is in flight, alone runs it at once on
// the caller's goroutine, under ctx bounded by the Batcher's timeout,
// exactly as without batching; the callers that arrive meanwhile wait and
// then go together in the next batch. Otherwise item waits for the next
// batch. Do returns nil once item's result is written (by alone or by the
// batch) before the caller's bound, and an error wrapping
// context.DeadlineExceeded or context.Canceled when the caller gave up
// first: ctx ended, or the Batcher's timeout passed since the call. A
// result that is written at or after that bound counts as too late. A
// caller that gives up before its batch left is taken out of it; one whose
// batch is in flight leaves it, and the result the batch brings later is
// dropped, as a reply that came too late.
func (b *Batcher[T]) Do(ctx context.Context, item T, alone func(context.Context)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	wctx, cancel := ctx, context.CancelFunc(func() {})
	if b.timeout > 0 {
		wctx, cancel = context.WithTimeout(ctx, b.timeout)
	}
	defer cancel()
	b.mu.Lock()
	if !b.busy {
		b.busy = true
		b.mu.Unlock()
		// Deferred, so that a round trip that panics (a driver's hook,
		// say) still hands the spell on or ends it: else no call of the
		// store would go again.
		defer b.afterAlone()
		alone(wctx)
		return nil
	}
	c := &call[T]{item: item, ctx: wctx, done: make(chan struct{})}
	b.waiting = append(b.waiting, c)
	b.mu.Unlock()

	select {
	case <-c.done:
		if !late(wctx) {
			return nil
		}
		// The batch's round trip ran to the latest deadline among its
		// callers, so a reply lost to that deadline (a read timeout)
		// reaches the caller whose deadline it was at the instant its
		// own context's timer fires: its bound decides, not the race.
	case <-wctx.Done():
		b.withdraw(c)
	}
	return b.gaveUp(ctx)
}

// late reports whether ctx's deadline has passed, whether or not its
// timer has fired yet.
func late(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ctx.Err() != nil || ok && !time.Now().Before(dl)
}

// gaveUp returns why a caller with context ctx left: its context's error,
// or, when only the Batcher's timeout ended the wait, that bound's.
func (b *Batcher[T]) gaveUp(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if late(ctx) {
		return context.DeadlineExceeded
	}
	return fmt.Errorf("no store reply within %v: %w", b.timeout, context.DeadlineExceeded)
}

// afterAlone hands the callers that arrived during a lone caller's round
// trip to a driver, or ends the busy spell when none did.
func (b *Batcher[T]) afterAlone() {
	if batch := b.next(); batch != nil {
		go b.drive(batch)
	}
}

// withdraw takes c out of the waiting callers if it is still there. Once
// its batch is in flight c stays in it, and its result goes unread.
func (b *Batcher[T]) withdraw(c *call[T]) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, w := range b.waiting {
		if w == c {
			b.waiting = append(b.waiting[:i], b.waiting[i+1:]...)
			return
		}
	}
}

// next takes up to max waiting callers as the next batch, or ends the
// busy spell when none is waiting.
func (b *Batcher[T]) next() []*call[T] {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.waiting) == 0 {
		b.busy = false
		return nil
	}
	n := min(len(b.waiting), b.max)
	batch := make([]*call[T], n)
	copy(batch, b.waiting)
	rest := copy(b.waiting, b.waiting[n:])
	clear(b.waiting[rest:])
	b.waiting = b.waiting[:rest]
	return batch
}

// drive runs batches back to back, starting with batch, until no caller
// is waiting: each batch holds the callers that arrived while the one
// before was in flight.
func (b *Batcher[T]) drive(batch []*call[T]) {
	for batch != nil {
		ctx, cancel := batchContext(batch)
		items := make([]T, len(batch))
		for i, c := range batch {
			items[i] = c.item
		}
		if len(batch) > 1 {
			b.batches.Add(1)
			b.shared.Add(int64(len(batch)))
		}
		b.run(ctx, items)
		cancel()
		for _, c := range batch {
			close(c.done)
		}
		batch = b.next()
	}
}

// batchContext returns the context of a batch's round trip: the first
// caller's values (a trace, say) without its cancellation, since the
// others depend on the round trip too, ending at the latest deadline of
// the batch's callers (none when one has none). A caller whose own
// deadline comes first leaves the batch then (see Do).
func batchContext[T any](batch []*call[T]) (context.Context, context.CancelFunc) {
	var last time.Time
	for _, c := range batch {
		dl, ok := c.ctx.Deadline()
		if !ok {
			return context.WithCancel(context.WithoutCancel(batch[0].ctx))
		}
		if dl.After(last) {
			last = dl
		}
	}
	return context.WithDeadline(context.WithoutCancel(batch[0].ctx), last)
}

// Shared returns how many items went in a batch of two or more, and how
// many such batches there were, since the Batcher was made.
func (b *Batcher[T]) Shared() (items, batches int64) {
	return b.shared.Load(), b.batches.Load()
}

// Waiting returns how many callers wait for the next batch.
func (b *Batcher[T]) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiting)
}

// Busy reports whether a round trip made for b is in flight.
func (b *Batcher[T]) Busy() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.busy
}
