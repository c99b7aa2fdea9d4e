package ledger

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/fakeclock"
)

// manualTimer is the Keeper's timer, fired by the test.
type manualTimer struct {
	mu      sync.Mutex
	every   time.Duration
	f       func()
	armed   bool // set by after and Reset, cleared by fire and Stop
	stopped bool
}

func (m *manualTimer) after(d time.Duration, f func()) timer {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.every, m.f, m.armed = d, f, true
	return m
}

func (m *manualTimer) Reset(d time.Duration) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.every, m.armed = d, true
	return false
}

func (m *manualTimer) Stop() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	was := m.armed
	m.armed, m.stopped = false, true
	return was
}

// fire runs the renewal as the timer's goroutine would, and returns when
// it has.
func (m *manualTimer) fire() {
	m.mu.Lock()
	m.armed = false
	f := m.f
	m.mu.Unlock()
	f()
}

func (m *manualTimer) isArmed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.armed
}

// renewCount is a Store counting its Renew calls.
type renewCount struct {
	Store
	n atomic.Int64
}

func (c *renewCount) Renew(ctx context.Context, k Key, token int64, lease time.Duration) error {
	c.n.Add(1)
	return c.Store.Renew(ctx, k, token, lease)
}

func TestKeeperRenewsUntilStopped(t *testing.T) {
	clock := fakeclock.New(time.Unix(1000, 0))
	s := &renewCount{Store: NewMemory(MemoryConfig{Now: clock.Now})}
	const lease = 30 * time.Second
	res, err := s.Reserve(t.Context(), ReserveRequest{Key: keyA, Fingerprint: fpA, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	tm := &manualTimer{}
	kp := keepLease(t.Context(), s, keyA, res.Token, lease, tm.after)
	if tm.every != lease/3 || !tm.isArmed() {
		t.Fatalf("armed %v to renew every %s, want every %s", tm.isArmed(), tm.every, lease/3)
	}
	// A long call: each third of the lease the keeper renews and arms the
	// next renewal, so after three full leases the action is still
	// pending for others.
	for range 9 {
		clock.Advance(lease / 3)
		tm.fire()
		if !tm.isArmed() || tm.every != lease/3 {
			t.Fatalf("after a renewal: armed %v, every %s", tm.isArmed(), tm.every)
		}
	}
	other, err := s.Reserve(t.Context(), ReserveRequest{Key: keyA, Fingerprint: fpA, KeysHonoured: true})
	if err != nil || other.Verdict != VerdictPending {
		t.Fatalf("after 3 leases with renewal: %s, %v", other.Verdict, err)
	}
	if err := kp.Stop(); err != nil {
		t.Fatal(err)
	}
	if tm.isArmed() || !tm.stopped {
		t.Fatal("Stop left the timer armed")
	}
	// A timer that fired as Stop ran renews nothing.
	tm.fire()
	if n := s.n.Load(); n != 9 || tm.isArmed() {
		t.Fatalf("%d renewals, armed %v after Stop; want 9, not armed", n, tm.isArmed())
	}
	if err := kp.Stop(); err != nil {
		t.Fatal("second Stop:", err)
	}
}

func TestKeeperReportsLostOwnership(t *testing.T) {
	clock := fakeclock.New(time.Unix(1000, 0))
	s := NewMemory(MemoryConfig{Now: clock.Now})
	res, _ := s.Reserve(t.Context(), ReserveRequest{Key: keyA, Fingerprint: fpA, Lease: time.Second})
	tm := &manualTimer{}
	kp := keepLease(t.Context(), s, keyA, res.Token, time.Second, tm.after)

	// The owner stalls past its lease and another takes the action over.
	clock.Advance(2 * time.Second)
	if r, _ := s.Reserve(t.Context(), ReserveRequest{Key: keyA, Fingerprint: fpA, KeysHonoured: true}); r.Verdict != VerdictResend {
		t.Fatalf("takeover: %s", r.Verdict)
	}
	tm.fire()
	select {
	case <-kp.Lost():
	default:
		t.Fatal("a renewal that met another owner did not close Lost")
	}
	if tm.isArmed() {
		t.Fatal("renewal goes on after ownership was lost")
	}
	if err := kp.Stop(); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("Stop: %v, want ErrNotOwner", err)
	}
}

func TestKeeperStopsWithContext(t *testing.T) {
	s := &renewCount{Store: NewMemory(MemoryConfig{})}
	ctx, cancel := context.WithCancel(t.Context())
	tm := &manualTimer{}
	kp := keepLease(ctx, s, keyA, 1, 0, tm.after)
	if tm.every != DefaultLease/3 {
		t.Fatalf("zero lease renews every %s", tm.every)
	}
	cancel()
	tm.fire()
	if n := s.n.Load(); n != 0 || tm.isArmed() {
		t.Fatalf("after the context ended: %d renewals, armed %v; want none", n, tm.isArmed())
	}
	if err := kp.Stop(); err != nil {
		t.Fatal(err)
	}
}

// hungRenewal is a Store whose Renew blocks until release is closed,
// whatever its context says, and reports each call on entered.
type hungRenewal struct {
	Store
	entered chan context.Context
	release chan struct{}
}

func (h *hungRenewal) Renew(ctx context.Context, _ Key, _ int64, _ time.Duration) error {
	h.entered <- ctx
	<-h.release
	return ctx.Err()
}

func TestKeeperStopDoesNotWaitForAHungRenewal(t *testing.T) {
	// Stop never waits for a renewal in flight, and each renewal has a
	// deadline: otherwise one hung store call holds the owner's response
	// for as long as the store hangs.
	s := &hungRenewal{Store: NewMemory(MemoryConfig{}), entered: make(chan context.Context), release: make(chan struct{})}
	const lease = 30 * time.Second
	tm := &manualTimer{}
	kp := keepLease(t.Context(), s, keyA, 1, lease, tm.after)
	fired := make(chan struct{})
	go func() {
		defer close(fired)
		tm.fire()
	}()
	ctx := <-s.entered
	dl, ok := ctx.Deadline()
	if !ok || time.Until(dl) > lease/3 {
		t.Fatalf("renewal deadline %v (set %v); want at most a third of the lease from now", dl, ok)
	}
	stopped := make(chan error)
	go func() { stopped <- kp.Stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("Stop: %v; a renewal cut short by Stop is no failure", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Stop waited for the hung renewal")
	}
	if ctx.Err() == nil {
		t.Fatal("Stop did not cancel the renewal in flight")
	}
	close(s.release)
	<-fired
	if tm.isArmed() {
		t.Fatal("a renewal that ended after Stop armed the next")
	}
	if err := kp.Stop(); err != nil {
		t.Fatalf("Stop after the cut renewal returned: %v", err)
	}
}

// renewSignal is a Store whose Renew succeeds and reports each call.
type renewSignal struct {
	Store
	renewed chan struct{}
}

func (r *renewSignal) Renew(context.Context, Key, int64, time.Duration) error {
	r.renewed <- struct{}{}
	return nil
}

// With the real timer: a Keeper renews on its own, again and again, and
// Stop ends it.
func TestKeeperRenewsWithRealTimer(t *testing.T) {
	s := &renewSignal{Store: NewMemory(MemoryConfig{}), renewed: make(chan struct{})}
	kp := KeepLease(t.Context(), s, keyA, 1, 30*time.Millisecond)
	for i := range 3 {
		select {
		case <-s.renewed:
		case <-time.After(time.Minute):
			t.Fatalf("renewal %d never came", i+1)
		}
	}
	if err := kp.Stop(); err != nil {
		t.Fatal(err)
	}
}
