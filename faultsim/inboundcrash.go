package faultsim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// crashPoint is where the server process of an inbound handler's first
// run dies, or what becomes of that run's MarkEffect write.
type crashPoint uint8

const (
	crashNone        crashPoint = iota
	crashBeforeMark             // dies before MarkEffect (before an effect in the transaction)
	crashAfterMark              // dies after MarkEffect returned, before the outside effect
	crashAfterEffect            // dies after the effect (outside, or in the transaction before COMMIT)
	crashMarkFails              // MarkEffect's write fails unwritten: the handler must not do the effect
	crashMarkLost               // MarkEffect's write is durable, its reply lost: the handler must not do the effect
)

var crashNames = [...]string{"none", "dies before MarkEffect", "dies after MarkEffect", "dies after the effect",
	"MarkEffect fails unwritten", "MarkEffect's reply lost"}

func (c crashPoint) String() string { return crashNames[c] }

// errMarkFailed is a MarkEffect write that failed.
var errMarkFailed = errors.New("simulation: the effect mark's write failed")

// drawCrashes draws the inbound handlers' crashes, from a stream of its
// own so that no other draw of a seed moves: half the keys' first runs
// crash somewhere, and the server restarts under the same Owner or a new
// one.
func drawCrashes(seed int64, in *inboundSchedule) {
	rng := rand.New(rand.NewPCG(uint64(seed), 0xc7a5))
	in.NewOwner = rng.IntN(2) == 0
	for i := range in.Keys {
		if rng.IntN(2) == 0 {
			continue
		}
		k := &in.Keys[i]
		switch {
		case k.InTx:
			k.Crash = []crashPoint{crashBeforeMark, crashAfterEffect}[rng.IntN(2)]
		case in.Atomic: // MarkEffect writes to the store
			k.Crash = crashPoint(1 + rng.IntN(int(crashMarkLost)))
		default: // MarkEffect is the process's memory
			k.Crash = crashPoint(1 + rng.IntN(int(crashAfterEffect)))
		}
	}
}

// server is one process of the inbound middleware's server: its store
// calls reach the store while it lives.
type server struct {
	id   int
	dead atomic.Bool
}

// serverStore is a server process's view of the middleware's store: a
// dead process writes nothing more, and its open transactions roll back,
// as PostgreSQL rolls back a transaction whose connection closed.
type serverStore struct {
	ledger.Store
	srv *server
}

// markFaultKey carries, in the context a handler calls MarkEffect with,
// what becomes of that mark's write (crashMarkFails, crashMarkLost).
type markFaultKey struct{}

func (s *serverStore) Reserve(ctx context.Context, req ledger.ReserveRequest) (ledger.Reservation, error) {
	if s.srv.dead.Load() {
		return ledger.Reservation{}, errDead
	}
	return s.Store.Reserve(ctx, req)
}

func (s *serverStore) Renew(ctx context.Context, k ledger.Key, token int64, lease time.Duration) error {
	if s.srv.dead.Load() {
		return errDead
	}
	return s.Store.Renew(ctx, k, token, lease)
}

func (s *serverStore) AddAttempt(ctx context.Context, k ledger.Key, token int64, class string) (ledger.Attempt, error) {
	if s.srv.dead.Load() {
		return ledger.Attempt{}, errDead
	}
	return s.Store.AddAttempt(ctx, k, token, class)
}

func (s *serverStore) Complete(ctx context.Context, k ledger.Key, token int64, o ledger.Outcome) error {
	if s.srv.dead.Load() {
		return errDead
	}
	return s.Store.Complete(ctx, k, token, o)
}

func (s *serverStore) Fail(ctx context.Context, k ledger.Key, token int64, f ledger.Failure) error {
	if s.srv.dead.Load() {
		return errDead
	}
	return s.Store.Fail(ctx, k, token, f)
}

func (s *serverStore) MarkSending(ctx context.Context, k ledger.Key, token int64) error {
	if s.srv.dead.Load() {
		return errDead
	}
	return s.Store.MarkSending(ctx, k, token)
}

// serverAtomicStore is a serverStore over a store with transactions.
type serverAtomicStore struct{ *serverStore }

func (s serverAtomicStore) BeginAtomic(ctx context.Context, k ledger.Key, token int64) (ledger.AtomicTx, error) {
	if s.srv.dead.Load() {
		return nil, errDead
	}
	tx, err := s.Store.(ledger.Atomic).BeginAtomic(ctx, k, token)
	if err != nil {
		return nil, err
	}
	return &serverTx{AtomicTx: tx, s: s.serverStore}, nil
}

// serverTx is a server process's transaction: it rolls back when the
// process dies before its COMMIT.
type serverTx struct {
	ledger.AtomicTx
	s     *serverStore
	mu    sync.Mutex // guards ended
	ended bool
}

func (tx *serverTx) end() bool {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	was := tx.ended
	tx.ended = true
	return was
}

func (tx *serverTx) Complete(ctx context.Context, o ledger.Outcome) error {
	if tx.s.srv.dead.Load() {
		if !tx.end() {
			tx.AtomicTx.Rollback(context.WithoutCancel(ctx))
		}
		return errDead
	}
	tx.end()
	return tx.AtomicTx.Complete(ctx, o)
}

func (tx *serverTx) Rollback(ctx context.Context) error {
	if tx.end() {
		return nil
	}
	return tx.AtomicTx.Rollback(ctx)
}

func (tx *serverTx) MarkEffect(ctx context.Context) error {
	if tx.s.srv.dead.Load() {
		return errDead
	}
	c, _ := ctx.Value(markFaultKey{}).(crashPoint)
	switch c {
	case crashMarkFails:
		return errMarkFailed
	case crashMarkLost:
		if err := tx.AtomicTx.MarkEffect(ctx); err != nil {
			return err
		}
		return fmt.Errorf("simulation: the effect mark's reply was lost: %w", context.DeadlineExceeded)
	}
	return tx.AtomicTx.MarkEffect(ctx)
}
