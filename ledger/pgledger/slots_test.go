package pgledger

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// A tenant holds at most its share of the slots; a slot freed while callers
// wait goes to the waiting tenant that holds the fewest, even one that came
// later; a caller not handed one within the wait is refused with ErrBusy;
// and nothing is left in the maps once every slot is free again.
func TestSlotsAreHandedOutFairlyByTenant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSlots(3, 2)
		ctx := context.Background()
		take := func(tenant string) func() {
			t.Helper()
			release, err := s.take(ctx, tenant, time.Hour)
			if err != nil {
				t.Fatalf("%s: %v", tenant, err)
			}
			return release
		}
		a1, a2, b1 := take("a"), take("a"), take("b")
		// a is at its share: refused once the wait is over, though b's
		// slot might free first.
		if _, err := s.take(ctx, "a", time.Second); !errors.Is(err, ledger.ErrBusy) {
			t.Fatalf("a past its share: %v; want ErrBusy", err)
		}
		got := make(chan string, 2)
		wait := func(tenant string) {
			go func() {
				release, err := s.take(ctx, tenant, time.Hour)
				if err != nil {
					got <- fmt.Sprint(tenant, ": ", err)
					return
				}
				got <- tenant
				t.Cleanup(release)
			}()
			synctest.Wait() // queued
		}
		wait("b") // holds 1
		wait("c") // holds none, came later
		a1()
		if g := <-got; g != "c" {
			t.Fatalf("the freed slot went to %s; want c, which held none", g)
		}
		a2()
		if g := <-got; g != "b" {
			t.Fatalf("the next freed slot went to %s; want b", g)
		}
		b1()
	})
	// After the bubble's cleanups every slot is free again.
}

// The queue is bounded: one tenant that fills it is refused at once past
// it, and another tenant's caller takes the place of that tenant's latest
// caller (shed at once with ErrBusy) and gets the next free slot.
func TestSlotsQueueIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSlots(1, 1)
		ctx := context.Background()
		release, err := s.take(ctx, "other", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		shed := make(chan error, maxSlotWaiters)
		for range maxSlotWaiters {
			go func() {
				if _, err := s.take(ctx, "hog", time.Hour); err != nil {
					shed <- err
				}
			}()
		}
		synctest.Wait()
		start := time.Now()
		if _, err := s.take(ctx, "hog", time.Hour); !errors.Is(err, ledger.ErrBusy) || time.Since(start) != 0 {
			t.Fatalf("the hog past the full queue: %v after %v; want ErrBusy at once", err, time.Since(start))
		}
		got := make(chan error, 1)
		go func() {
			r, err := s.take(ctx, "victim", time.Hour)
			if err == nil {
				defer r()
			}
			got <- err
		}()
		synctest.Wait()
		select {
		case err := <-shed:
			if !errors.Is(err, ledger.ErrBusy) || time.Since(start) != 0 {
				t.Fatalf("the shed caller: %v after %v; want ErrBusy at once", err, time.Since(start))
			}
		default:
			t.Fatal("no caller of the hog was shed for the victim")
		}
		s.mu.Lock()
		queued, hogs := len(s.queue), s.waiting["hog"]
		s.mu.Unlock()
		if queued != maxSlotWaiters || hogs != maxSlotWaiters-1 {
			t.Fatalf("%d queued, %d of the hog; want %d and %d", queued, hogs, maxSlotWaiters, maxSlotWaiters-1)
		}
		// The victim holds none, as the hog does, and came last; it has
		// one caller waiting to the hog's 1,023, so it goes first.
		release()
		synctest.Wait()
		select {
		case err := <-got:
			if err != nil || time.Since(start) != 0 {
				t.Fatalf("the victim: %v after %v; want the freed slot at once", err, time.Since(start))
			}
		default:
			t.Fatal("the freed slot did not go to the victim")
		}
		time.Sleep(2 * time.Hour) // the bubble's clock: every wait ends
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.queue) != 0 || len(s.waiting) != 0 {
			t.Fatalf("after the waits ended: %d queued, %d tenants waiting; want none", len(s.queue), len(s.waiting))
		}
	})
}

// A slot given back leaves no entry behind: held and waiting hold only
// tenants that hold or wait.
func TestSlotsForgetTenantsThatLeft(t *testing.T) {
	s := newSlots(2, 1)
	for i := range 100 {
		release, err := s.take(context.Background(), fmt.Sprint("t", i), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		release()
		release() // a second call frees nothing
	}
	if s.open != 0 || len(s.held) != 0 || len(s.waiting) != 0 || len(s.queue) != 0 {
		t.Fatalf("open %d, held %v, waiting %v, queue %d; want all empty", s.open, s.held, s.waiting, len(s.queue))
	}
}
