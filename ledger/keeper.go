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

	lost chan struct{} // closed when the token stopped being current
	stop chan struct{} // closed by Stop
	done chan struct{} // closed when the renewing goroutine has exited
	once sync.Once     // closes stop
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
// with. A renewal that fails with ErrNotOwner (another owner took over)
// stops the Keeper and closes Lost; other errors, such as a Redis blip, are
// kept and renewal goes on, since the lease still has two thirds to run.
func KeepLease(ctx context.Context, s Store, k Key, token int64, lease time.Duration) *Keeper {
	return keepLease(ctx, s, k, token, lease, realTicker)
}

func keepLease(ctx context.Context, s Store, k Key, token int64, lease time.Duration, tick ticker) *Keeper {
	if lease <= 0 {
		lease = DefaultLease
	}
	kp := &Keeper{lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	c, stopTick := tick(lease / 3)
	go func() {
		defer close(kp.done)
		defer stopTick()
		for {
			select {
			case <-ctx.Done():
				return
			case <-kp.stop:
				return
			case <-c:
			}
			err := s.Renew(ctx, k, token, lease)
			if err == nil {
				continue
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

// Stop stops renewing, waits for any renewal in flight, and returns the
// first renewal error, or nil. It is safe to call more than once.
func (kp *Keeper) Stop() error {
	kp.once.Do(func() { close(kp.stop) })
	<-kp.done
	kp.mu.Lock()
	defer kp.mu.Unlock()
	return kp.err
}
