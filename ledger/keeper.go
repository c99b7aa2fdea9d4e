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
type Keeper struct {
	mu  sync.Mutex // guards err
	err error      // first renewal error

	lost   chan struct{}      // closed when the token stopped being current
	cancel context.CancelFunc // ends the renewing goroutine and a renewal in flight
	done   chan struct{}      // closed when the renewing goroutine has exited
}

// ticker is the timer seam: it returns a channel that fires every d and a
// function that stops it. Tests replace it with a channel they drive.
type ticker func(d time.Duration) (<-chan time.Time, func())

func realTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// KeepLease starts renewing the lease of the action k, owned with token,
// to lease from each renewal, every third of lease, until Stop is called or
// ctx ends. Zero lease means DefaultLease; pass the lease you reserved
// with. Each renewal gets a third of lease to finish: a hung store cannot
// hold one past the next tick. A renewal that fails with ErrNotOwner
// (another owner took over) stops the Keeper and closes Lost; other
// errors, such as a Redis blip or a renewal that timed out, are kept and
// renewal goes on, since the lease still has two thirds to run.
func KeepLease(ctx context.Context, s Store, k Key, token int64, lease time.Duration) *Keeper {
	return keepLease(ctx, s, k, token, lease, realTicker)
}

func keepLease(ctx context.Context, s Store, k Key, token int64, lease time.Duration, tick ticker) *Keeper {
	if lease <= 0 {
		lease = DefaultLease
	}
	ctx, cancel := context.WithCancel(ctx)
	kp := &Keeper{lost: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	c, stopTick := tick(lease / 3)
	go func() {
		defer close(kp.done)
		defer stopTick()
		for {
			select {
			case <-ctx.Done():
				return
			case <-c:
			}
			rctx, cancelRenewal := context.WithTimeout(ctx, lease/3)
			err := s.Renew(rctx, k, token, lease)
			cancelRenewal()
			if err == nil {
				continue
			}
			if ctx.Err() != nil {
				return // stopped: a renewal cut short by Stop is no failure
			}
			kp.mu.Lock()
			if kp.err == nil {
				kp.err = err
			}
			kp.mu.Unlock()
			if errors.Is(err, ErrNotOwner) {
				close(kp.lost)
				return
			}
		}
	}()
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
	kp.cancel()
	kp.mu.Lock()
	defer kp.mu.Unlock()
	return kp.err
}
