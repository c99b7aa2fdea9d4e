package ledger

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/fakeclock"
)

// manualTicker is a ticker the test fires by hand.
type manualTicker struct {
	c       chan time.Time
	every   time.Duration
	stopped chan struct{}
}

func newManualTicker() *manualTicker {
	return &manualTicker{c: make(chan time.Time), stopped: make(chan struct{})}
}

func (m *manualTicker) tick(d time.Duration) (<-chan time.Time, func()) {
	m.every = d
	return m.c, func() { close(m.stopped) }
}

func TestKeeperRenewsUntilStopped(t *testing.T) {
	clock := fakeclock.New(time.Unix(1000, 0))
	s := NewMemory(MemoryConfig{Now: clock.Now})
	const lease = 30 * time.Second
	res, err := s.Reserve(t.Context(), ReserveRequest{Key: keyA, Fingerprint: fpA, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	tk := newManualTicker()
	kp := keepLease(t.Context(), s, keyA, res.Token, lease, tk.tick)
	if tk.every != lease/3 {
		t.Fatalf("renews every %s, want %s", tk.every, lease/3)
	}
	// A long call: each third of the lease the keeper renews, so after
	// three full leases the action is still pending for others.
	for range 9 {
		clock.Advance(lease / 3)
		tk.c <- clock.Now()
	}
	tk.c <- clock.Now() // the send returns only after the previous renewal finished
	other, err := s.Reserve(t.Context(), ReserveRequest{Key: keyA, Fingerprint: fpA, KeysHonoured: true})
	if err != nil || other.Verdict != VerdictPending {
		t.Fatalf("after 3 leases with renewal: %s, %v", other.Verdict, err)
	}
	if err := kp.Stop(); err != nil {
		t.Fatal(err)
	}
	<-tk.stopped
	if err := kp.Stop(); err != nil {
		t.Fatal("second Stop:", err)
	}
}

func TestKeeperReportsLostOwnership(t *testing.T) {
	clock := fakeclock.New(time.Unix(1000, 0))
	s := NewMemory(MemoryConfig{Now: clock.Now})
	res, _ := s.Reserve(t.Context(), ReserveRequest{Key: keyA, Fingerprint: fpA, Lease: time.Second})
	tk := newManualTicker()
	kp := keepLease(t.Context(), s, keyA, res.Token, time.Second, tk.tick)

	// The owner stalls past its lease and another takes the action over.
	clock.Advance(2 * time.Second)
	if r, _ := s.Reserve(t.Context(), ReserveRequest{Key: keyA, Fingerprint: fpA, KeysHonoured: true}); r.Verdict != VerdictResend {
		t.Fatalf("takeover: %s", r.Verdict)
	}
	tk.c <- clock.Now()
	<-kp.Lost()
	if err := kp.Stop(); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("Stop: %v, want ErrNotOwner", err)
	}
}

func TestKeeperStopsWithContext(t *testing.T) {
	s := NewMemory(MemoryConfig{})
	ctx, cancel := context.WithCancel(t.Context())
	tk := newManualTicker()
	kp := keepLease(ctx, s, keyA, 1, 0, tk.tick)
	if tk.every != DefaultLease/3 {
		t.Fatalf("zero lease renews every %s", tk.every)
	}
	cancel()
	<-tk.stopped
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
	tk := newManualTicker()
	kp := keepLease(t.Context(), s, keyA, 1, lease, tk.tick)
	tk.c <- time.Now()
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
	<-kp.done
}
