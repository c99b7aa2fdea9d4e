package ledger

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Keeper renews an owned action's lease in the background while a long
// call runs, so that other workers keep seeing it as pending rather than
// stuck. Create one with KeepLease and always call Stop.
//
// It holds one timer and no goroutine of its own: a renewal runs in the
// timer's goroutine, and the next is armed when it returns. A call that
// ends before the first third of its lease costs the timer alone.
type Keeper struct {
	mu      sync.Mutex
	err     error              // first renewal error
	stopped bool               // Stop was called, or ownership was lost
	cancel  context.CancelFunc // ends the renewal in flight; nil when none
	next    timer              // fires the next renewal

	lost chan struct{} // closed when the token stopped being current
}

// timer is the seam between the Keeper and time: Reset arms it again to
// fire in d, Stop disarms it. A *time.Timer made by time.AfterFunc is one.
type timer interface {
	Reset(d time.Duration) bool
	Stop() bool
}

// afterFunc returns a timer that runs f in its own goroutine after d.
// Tests replace it with a timer they fire by hand.
type afterFunc func(d time.Duration, f func()) timer

func realAfterFunc(d time.Duration, f func()) timer { return time.AfterFunc(d, f) }

// KeepLease starts renewing the lease of the action k, owned with token,
// to lease from each renewal, every third of lease, until Stop is called or
// ctx ends. Zero lease means DefaultLease; pass the lease you reserved
// with. Each renewal gets a third of lease to finish: a hung store cannot
// hold one past the next tick. A renewal that fails with ErrNotOwner
// (another owner took over) stops the Keeper and closes Lost; other
// errors, such as a Redis blip or a renewal that timed out, are kept and
// renewal goes on, since the lease still has two thirds to run.
func KeepLease(ctx context.Context, s Store, k Key, token int64, lease time.Duration) *Keeper {
	return keepLease(ctx, s, k, token, lease, realAfterFunc)
}

func keepLease(ctx context.Context, s Store, k Key, token int64, lease time.Duration, after afterFunc) *Keeper {
	if lease <= 0 {
		lease = DefaultLease
	}
	every := lease / 3
	kp := &Keeper{lost: make(chan struct{})}
	renew := func() {
		kp.mu.Lock()
		if kp.stopped || ctx.Err() != nil {
			kp.mu.Unlock()
			return
		}
		rctx, cancel := context.WithTimeout(ctx, every)
		kp.cancel = cancel
		kp.mu.Unlock()

		err := s.Renew(rctx, k, token, lease)
		cancel()

		kp.mu.Lock()
		defer kp.mu.Unlock()
		kp.cancel = nil
		if kp.stopped || ctx.Err() != nil {
			return // stopped: a renewal cut short by Stop is no failure
		}
		if err != nil && kp.err == nil {
			kp.err = err
		}
		if errors.Is(err, ErrNotOwner) {
			kp.stopped = true
			close(kp.lost)
			return
		}
		kp.next.Reset(every)
	}
	// Held while the timer is made, so that a renewal firing at once
	// finds it set.
	kp.mu.Lock()
	kp.next = after(every, renew)
	kp.mu.Unlock()
	return kp
}

// Lost returns a channel closed when a renewal found the token no longer
// current: another owner has the action, and this owner must not record
// an outcome (Complete would fail with ErrNotOwner anyway).
func (kp *Keeper) Lost() <-chan struct{} { return kp.lost }

// Stop stops renewing and returns the first renewal error met so far, or
// nil. It cancels a renewal in flight and never waits for it: the response
// a lease protects must not be held by a store that hangs. A store that
// ignores its context may thus finish a renewal after Stop returned; the
// renewal is fenced by the token, so it changes nothing once the action
// is settled. It is safe to call more than once.
func (kp *Keeper) Stop() error {
	kp.mu.Lock()
	defer kp.mu.Unlock()
	if !kp.stopped {
		kp.stopped = true
		kp.next.Stop()
	}
	if kp.cancel != nil {
		kp.cancel()
	}
	return kp.err
}
