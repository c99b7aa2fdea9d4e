package groupcommit

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// rig is a Batcher of ints whose lone round trip is held until release
// is closed, and which records the batches it ran.
type rig struct {
	b       *Batcher[*int]
	mu      sync.Mutex
	batches [][]int
	started chan struct{} // closed once the lone round trip started
	release chan struct{}
	stuck   chan struct{} // when not nil, batches wait for it
}

func newRig(size int, timeout time.Duration) *rig {
	r := &rig{started: make(chan struct{}), release: make(chan struct{})}
	r.b = New(size, timeout, func(ctx context.Context, items []*int) {
		if r.stuck != nil {
			<-r.stuck // a round trip that ignores its context
		}
		var got []int
		for _, it := range items {
			got = append(got, *it)
			*it = -*it // the result
		}
		r.mu.Lock()
		r.batches = append(r.batches, got)
		r.mu.Unlock()
	})
	return r
}

// lead runs the lone call, held until release.
func (r *rig) lead(t *testing.T) *sync.WaitGroup {
	var wg sync.WaitGroup
	v := 0
	wg.Go(func() {
		if err := r.b.Do(t.Context(), &v, func(context.Context) { close(r.started); <-r.release }); err != nil {
			t.Errorf("lone call: %v", err)
		}
	})
	<-r.started
	return &wg
}

func TestBatcherLoneCallerRunsAlone(t *testing.T) {
	r := newRig(8, 0)
	v := 1
	ran := false
	if err := r.b.Do(t.Context(), &v, func(context.Context) { ran = true }); err != nil {
		t.Fatal(err)
	}
	if !ran || len(r.batches) != 0 || r.b.Busy() {
		t.Fatalf("alone ran %v, batches %v, busy %v; want alone only, then idle", ran, r.batches, r.b.Busy())
	}
}

func TestBatcherCallersArrivingDuringARoundTripShareTheNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 5
		r := newRig(3, 0)
		lone := r.lead(t)
		if r.b.Waiting() != 0 {
			t.Fatal("callers wait before any arrived")
		}
		vals := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			vals[i] = i + 1
			wg.Go(func() {
				if err := r.b.Do(t.Context(), &vals[i], func(context.Context) { t.Error("a waiting call ran alone") }); err != nil {
					t.Error(err)
				}
			})
			synctest.Wait() // queued, in arrival order
		}
		close(r.release)
		wg.Wait()
		lone.Wait()
		// At most 3 per batch, first come first.
		if want := [][]int{{1, 2, 3}, {4, 5}}; !slices.EqualFunc(r.batches, want, slices.Equal) {
			t.Fatalf("batches %v; want %v", r.batches, want)
		}
		for i, v := range vals {
			if v != -(i + 1) {
				t.Fatalf("call %d read %d; want its own result %d", i, v, -(i + 1))
			}
		}
		if items, batches := r.b.Shared(); items != n || batches != 2 {
			t.Fatalf("Shared %d, %d; want %d, 2", items, batches, n)
		}
		synctest.Wait()
		if r.b.Busy() {
			t.Fatal("busy after every call returned")
		}
	})
}

func TestBatcherCallerThatGivesUpBeforeItsBatchIsNotSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(8, 0)
		lone := r.lead(t)
		ctx, cancel := context.WithCancel(t.Context())
		v := 7
		done := make(chan error)
		go func() { done <- r.b.Do(ctx, &v, func(context.Context) {}) }()
		synctest.Wait()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Do: %v; want context.Canceled", err)
		}
		if r.b.Waiting() != 0 {
			t.Fatal("a caller that gave up still waits")
		}
		close(r.release)
		lone.Wait()
		synctest.Wait()
		if len(r.batches) != 0 {
			t.Fatalf("batches %v; want none", r.batches)
		}
	})
}

func TestBatcherTimeoutEndsWaitForAStuckBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = time.Second
		r := newRig(8, timeout)
		r.stuck = make(chan struct{})
		lone := r.lead(t)
		v := 3
		done := make(chan error)
		start := time.Now()
		go func() { done <- r.b.Do(t.Context(), &v, func(context.Context) {}) }()
		synctest.Wait()
		close(r.release) // the lone call returns; the batch goes, and is stuck
		lone.Wait()
		err := <-done
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Do: %v; want context.DeadlineExceeded", err)
		}
		// Fake time: exactly the bound, counted from the call.
		if took := time.Since(start); took != timeout {
			t.Fatalf("waited %v; want %v", took, timeout)
		}
		close(r.stuck)
		synctest.Wait()
	})
}

func TestBatcherReplyLostAtTheCallersDeadlineIsItsDeadline(t *testing.T) {
	// The batch's round trip runs to its callers' latest deadline and
	// fails there, as a read timeout does: the caller whose deadline it
	// was gets its deadline, not the round trip's error, whichever of the
	// two its select sees first.
	synctest.Test(t, func(t *testing.T) {
		const bound = time.Second
		for range 20 {
			r := newRig(8, 0)
			r.b.run = func(ctx context.Context, items []*int) {
				<-ctx.Done()
				for _, it := range items {
					*it = -1 // the lost reply's error
				}
			}
			lone := r.lead(t)
			ctx, cancel := context.WithTimeout(t.Context(), bound)
			v := 1
			done := make(chan error)
			go func() { done <- r.b.Do(ctx, &v, func(context.Context) {}) }()
			synctest.Wait()
			close(r.release) // the batch goes, and its reply is lost at the deadline
			if err := <-done; !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Do: %v (result %d); want context.DeadlineExceeded", err, v)
			}
			cancel()
			lone.Wait()
		}
	})
}

func TestBatcherTimeoutBoundsTheLoneCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = time.Second
		r := newRig(8, timeout)
		v := 1
		start := time.Now()
		var got error
		if err := r.b.Do(t.Context(), &v, func(ctx context.Context) {
			<-ctx.Done() // a round trip that waits for its bound
			got = ctx.Err()
		}); err != nil {
			t.Fatal(err)
		}
		if !errors.Is(got, context.DeadlineExceeded) {
			t.Fatalf("lone round trip ended with %v; want context.DeadlineExceeded", got)
		}
		// Fake time: exactly the bound, counted from the call.
		if took := time.Since(start); took != timeout {
			t.Fatalf("lone round trip ran %v; want %v", took, timeout)
		}
	})
}

// A lone round trip that panics (a driver's hook, say) leaves the Batcher
// as it found it: the next caller goes at once, and so do the callers that
// waited during the panicking round trip.
func TestBatcherPanicInTheLoneRoundTripLeavesItUsable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(8, 0)
		panicked := make(chan any, 1)
		go func() {
			defer func() { panicked <- recover() }()
			v := 0
			r.b.Do(t.Context(), &v, func(context.Context) { close(r.started); <-r.release; panic("hook") })
		}()
		<-r.started
		waiter := 2
		waited := make(chan error, 1)
		go func() { waited <- r.b.Do(t.Context(), &waiter, func(context.Context) {}) }()
		synctest.Wait() // the waiter is queued behind the lone round trip
		close(r.release)
		if p := <-panicked; p != "hook" {
			t.Fatalf("recovered %v; want the round trip's panic", p)
		}
		if err := <-waited; err != nil || waiter != -2 {
			t.Fatalf("caller that waited: %v, result %d; want its batch's -2", err, waiter)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		v, ran := 3, false
		if err := r.b.Do(ctx, &v, func(context.Context) { ran = true }); err != nil || !ran {
			t.Fatalf("next call: %v, ran alone %v; want it run alone at once", err, ran)
		}
	})
}
