package pgledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/retrybudget/retrybudget/ledger"
)

// txKey is the context key under which AtomicTx.Context stores the
// transaction.
type txKey struct{}

// Tx returns the transaction an atomic owner does its effects in: the one
// the idempotency middleware (with Config.Atomic) or BeginAtomic's
// AtomicTx.Context put in ctx. Every write through it commits together
// with the action's completed record, or not at all. Its Commit is
// refused with ErrTxOwned (the action's Complete commits it), so that a
// helper which commits what it is given cannot commit the effects without
// the record; Begin opens a savepoint, which commits into it as usual.
func Tx(ctx context.Context) (pgx.Tx, bool) {
	tx, ok := ctx.Value(txKey{}).(pgx.Tx)
	return tx, ok
}

// ErrTxOwned is the error of Commit on the transaction Tx returns: only
// the action's AtomicTx.Complete commits it, with the record.
var ErrTxOwned = errors.New("pgledger: the action's transaction is committed with its record, by AtomicTx.Complete; commit a savepoint (Begin) instead")

// ownedTx is the transaction as Tx hands it out: Commit is refused.
type ownedTx struct{ pgx.Tx }

// Commit refuses: see ErrTxOwned. The transaction stays open.
func (ownedTx) Commit(context.Context) error { return ErrTxOwned }

// BeginAtomic implements ledger.Atomic: it marks the owned action atomic
// (so that, should its owner die, the expired lease means no effect and
// the action is retried) in a statement of its own, then begins the
// transaction. The transaction holds one connection of the pool until
// Complete or Rollback, and one of Config.MaxAtomic slots, of which the
// action's tenant holds at most Config.MaxAtomicPerTenant: when none is
// handed out within Config.AtomicWait, BeginAtomic fails with
// ledger.ErrBusy and marks nothing.
func (s *Store) BeginAtomic(ctx context.Context, k ledger.Key, token int64) (ledger.AtomicTx, error) {
	release, err := s.takeSlot(ctx, k.Tenant)
	if err != nil {
		return nil, err
	}
	if err := s.fencedExec(ctx, "markAtomic", k, token); err != nil {
		release()
		return nil, err
	}
	bctx, cancel := s.bound(ctx)
	defer cancel()
	tx, err := s.db.Begin(bctx)
	if err != nil {
		release()
		return nil, fmt.Errorf("ledger: postgres begin: %w", err)
	}
	a := &atomicTx{s: s, tx: tx, k: k, token: token, deadline: time.Now().Add(s.cfg.atomicTimeout())}
	// The transaction will lock the row: a batch waiting for it would
	// hold every other action of the batch.
	unhold := s.batch.hold(k.ID())
	a.release = func() {
		unhold()
		a.mu.Lock()
		cancels := a.cancels
		a.cancels = nil
		a.mu.Unlock()
		for _, c := range cancels {
			c()
		}
		release()
	}
	return a, nil
}

// takeSlot waits up to Config.AtomicWait for a free atomic transaction
// slot for tenant, handed out fairly by tenant (Config.MaxAtomicPerTenant),
// and returns the function that frees it (once, whoever calls it).
func (s *Store) takeSlot(ctx context.Context, tenant string) (func(), error) {
	if s.slots == nil {
		return func() {}, nil
	}
	return s.slots.take(ctx, tenant, s.cfg.atomicWait())
}

// atomicTx is one owner's transaction.
type atomicTx struct {
	s     *Store
	tx    pgx.Tx
	k     ledger.Key
	token int64
	// release ends the contexts Context made and frees the transaction's
	// slot; it may be called more than once.
	release func()
	// deadline ends the transaction (Config.AtomicTimeout).
	deadline time.Time

	mu      sync.Mutex           // guards cancels
	cancels []context.CancelFunc // of the contexts Context made
}

// Context returns ctx carrying the transaction, ending at its deadline or
// when the transaction ends, whichever comes first.
func (a *atomicTx) Context(ctx context.Context) context.Context {
	ctx, cancel := context.WithDeadline(ctx, a.deadline)
	a.mu.Lock()
	a.cancels = append(a.cancels, cancel)
	a.mu.Unlock()
	return context.WithValue(ctx, txKey{}, pgx.Tx(ownedTx{a.tx}))
}

// Complete writes the outcome fenced by the token, then commits. The
// UPDATE locks the record's row until the commit, so a concurrent Fail by
// the same owner (after a lost commit answer) waits for the commit and
// then finds the action completed or still in progress, never half-way.
func (a *atomicTx) Complete(ctx context.Context, o ledger.Outcome) error {
	defer a.release()
	if time.Now().After(a.deadline) {
		a.rollback()
		return fmt.Errorf("ledger: postgres complete: the transaction passed its deadline (%v)", a.s.cfg.atomicTimeout())
	}
	args, err := a.s.completeArgs(a.k, o)
	if err != nil {
		a.rollback()
		return err
	}
	if a.tx.Conn().PgConn().TxStatus() == 'E' {
		// A statement of the owner failed: the server refuses every
		// later one until the rollback.
		a.rollback()
		return fmt.Errorf("ledger: postgres complete: %w", ledger.ErrTxAborted)
	}
	ctx, cancel := a.s.bound(ctx)
	defer cancel()
	tag, err := a.tx.Exec(ctx, a.s.queries["complete"], append([]any{a.k.ID(), a.token}, args...)...)
	switch {
	case err != nil:
		a.rollback()
		return fmt.Errorf("ledger: postgres complete: %w", err)
	case tag.RowsAffected() != 1:
		a.rollback()
		return ledger.NotOwner(a.k)
	}
	if err := a.tx.Commit(ctx); err != nil {
		if errors.Is(err, pgx.ErrTxCommitRollback) {
			// The server answered: it rolled back (a deferred
			// constraint failed at the commit).
			return fmt.Errorf("ledger: postgres commit: %w", err)
		}
		return fmt.Errorf("ledger: postgres commit: %w: %w", ledger.ErrCommitUnknown, err)
	}
	return nil
}

func (a *atomicTx) Rollback(ctx context.Context) error {
	defer a.release()
	ctx, cancel := a.s.bound(ctx)
	defer cancel()
	if err := a.tx.Rollback(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		return fmt.Errorf("ledger: postgres rollback: %w", err)
	}
	return nil
}

// MarkEffect implements ledger.AtomicTx: it clears the record's atomic
// mark in a fenced statement of its own on the pool, not in the
// transaction, so the mark is committed before the owner's outside
// effect and survives the transaction's rollback. The statement takes one
// of the connections Config.MaxAtomic leaves to the store, never a
// transaction slot: a handler holding the last slot still gets its mark.
//
// On a DB of one session (a *pgx.Conn or a pgx.Tx) the statement would run
// inside the owner's transaction and be rolled back with it, so MarkEffect
// refuses, wrapping ledger.ErrInvalidConfig: the owner must not do the
// effect, and the store needs a pool.
func (a *atomicTx) MarkEffect(ctx context.Context) error {
	switch a.s.db.(type) {
	case *pgx.Conn, pgx.Tx:
		return fmt.Errorf("%w: pgledger: MarkEffect needs a pool as the Store's DB; on one connection the mark would be rolled back with the transaction", ledger.ErrInvalidConfig)
	}
	return a.s.fencedExec(ctx, "markEffect", a.k, a.token)
}

// markEffectSQL records that the owner did, or is about to do, an effect
// outside its transaction: the record is no longer atomic, so an expired
// lease leaves it uncertain (effState) instead of failed.
const markEffectSQL = `UPDATE {{table}} SET atomic = false WHERE ` + fenced

// rollback abandons the transaction after a failure, when its error is
// the one to report.
func (a *atomicTx) rollback() {
	ctx, cancel := context.WithTimeout(context.Background(), a.s.cfg.timeout())
	defer cancel()
	_ = a.tx.Rollback(ctx)
}

var _ ledger.Atomic = (*Store)(nil)
