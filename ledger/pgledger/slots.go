package pgledger

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// maxSlotWaiters caps the BeginAtomic calls waiting for a slot at once,
// over every tenant. A caller that finds the queue full takes the place of
// the latest caller of the tenant with the most callers waiting, which is
// refused with ledger.ErrBusy as it would be after AtomicWait; when no
// tenant has more waiting than the caller's own, the caller is refused.
const maxSlotWaiters = 1024

// slots hands out the atomic transaction slots (Config.MaxAtomic) fairly
// by tenant: a tenant holds at most perTenant of them at once, so one
// tenant's slow handlers cannot take every slot, a slot freed while
// callers wait goes to the waiting tenant that holds the fewest (then has
// the fewest callers waiting; the earliest caller among equals), and a
// full queue sheds the tenant with the most callers in it.
//
// Every map is keyed by a tenant holding or waiting for a slot: held has
// at most n entries, waiting at most maxSlotWaiters.
type slots struct {
	mu sync.Mutex // guards open, held, waiting and queue

	n, perTenant int
	open         int            // slots taken
	held         map[string]int // tenant -> slots it holds; no zero entries
	waiting      map[string]int // tenant -> its callers in queue; no zero entries
	queue        []*slotWaiter  // waiting callers, earliest first
}

// slotWaiter is one caller waiting for a slot.
type slotWaiter struct {
	tenant string
	// granted is closed when the caller is given a slot, or shed from a
	// full queue (shed true); only grant and shed close it, with slots.mu
	// held.
	granted chan struct{}
	shed    bool // guarded by slots.mu
}

// newSlots returns n slots, of which one tenant may hold perTenant.
func newSlots(n, perTenant int) *slots {
	return &slots{n: n, perTenant: min(max(perTenant, 1), n), held: map[string]int{}, waiting: map[string]int{}}
}

// take waits up to wait for a slot for tenant and returns the function
// that frees it (once, whoever calls it). It fails with ledger.ErrBusy
// when none is handed out within wait, or when the queue is full and
// tenant has the most callers in it.
func (s *slots) take(ctx context.Context, tenant string, wait time.Duration) (func(), error) {
	s.mu.Lock()
	// grant runs after every change, so a free slot that tenant may
	// hold is not owed to any waiting caller: take it.
	if s.open < s.n && s.held[tenant] < s.perTenant {
		s.hold(tenant)
		s.mu.Unlock()
		return s.releaser(tenant), nil
	}
	if len(s.queue) >= maxSlotWaiters && !s.shedFor(tenant) {
		s.mu.Unlock()
		return nil, s.busy(wait)
	}
	w := &slotWaiter{tenant: tenant, granted: make(chan struct{})}
	s.queue = append(s.queue, w)
	s.waiting[tenant]++
	s.mu.Unlock()

	t := time.NewTimer(wait)
	defer t.Stop()
	err := s.busy(wait)
	select {
	case <-w.granted:
	case <-t.C:
	case <-ctx.Done():
		err = fmt.Errorf("%w: %w", ledger.ErrBusy, ctx.Err())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-w.granted:
		if w.shed {
			return nil, err
		}
		// Handed a slot, perhaps as the wait ended: keep it rather than
		// lose it.
		return s.releaser(tenant), nil
	default:
	}
	s.dequeue(w)
	return nil, err
}

// shedFor makes room in the full queue for a caller of tenant: it sheds
// the latest caller of the tenant with the most callers waiting, when that
// tenant has more than tenant. It reports whether it made room, and
// requires that s.mu is held.
func (s *slots) shedFor(tenant string) bool {
	most := tenant
	for t, n := range s.waiting {
		if n > s.waiting[most] {
			most = t
		}
	}
	if most == tenant {
		return false
	}
	for i := len(s.queue) - 1; i >= 0; i-- {
		if w := s.queue[i]; w.tenant == most {
			s.dequeue(w)
			w.shed = true
			close(w.granted)
			return true
		}
	}
	return false
}

// busy is take's error when no slot was handed out within wait.
func (s *slots) busy(wait time.Duration) error {
	return fmt.Errorf("%w: %d open, none handed out within %v (at most %d per tenant)", ledger.ErrBusy, s.n, wait, s.perTenant)
}

// releaser returns the function that frees tenant's slot once.
func (s *slots) releaser(tenant string) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.open--
			if s.held[tenant]--; s.held[tenant] == 0 {
				delete(s.held, tenant)
			}
			s.grant()
		})
	}
}

// hold gives tenant a slot. It requires that s.mu is held.
func (s *slots) hold(tenant string) {
	s.open++
	s.held[tenant]++
}

// dequeue removes w from the queue. It requires that s.mu is held.
func (s *slots) dequeue(w *slotWaiter) {
	for i, q := range s.queue {
		if q == w {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			break
		}
	}
	if s.waiting[w.tenant]--; s.waiting[w.tenant] == 0 {
		delete(s.waiting, w.tenant)
	}
}

// grant hands free slots to waiting callers: each to the earliest caller
// of the tenant that holds the fewest among those under perTenant and,
// among those, has the fewest callers waiting, so that a tenant's many
// callers do not queue another's few behind them. It requires that s.mu
// is held.
func (s *slots) grant() {
	for s.open < s.n {
		var next *slotWaiter
		for _, w := range s.queue {
			h := s.held[w.tenant]
			if h >= s.perTenant {
				continue
			}
			if next == nil || h < s.held[next.tenant] ||
				h == s.held[next.tenant] && s.waiting[w.tenant] < s.waiting[next.tenant] {
				next = w
			}
		}
		if next == nil {
			return
		}
		s.dequeue(next)
		s.hold(next.tenant)
		close(next.granted)
	}
}
