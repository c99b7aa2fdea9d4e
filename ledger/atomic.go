package ledger

import (
	"context"
	"errors"
)

// ErrCommitUnknown reports that an AtomicTx's commit was sent but its
// answer was lost (the connection broke): the transaction, the owner's
// writes and the completed record with them, may or may not have been
// applied. Either way both happened or neither did; the record says which.
var ErrCommitUnknown = errors.New("ledger: commit outcome unknown")

// ErrTxAborted reports that an AtomicTx could not complete because one of
// the owner's own statements had already failed in it, which aborts the
// whole transaction (a unique violation the handler caught, say): nothing
// of it can commit, so Complete rolled it back and wrote nothing, and the
// record is still the owner's, in progress. The owner may still record
// an answer that needs none of the transaction's writes, with
// Store.Complete outside it.
var ErrTxAborted = errors.New("ledger: the owner's transaction was aborted by its own failed statement")

// Atomic is a Store that can complete an action in the same transaction
// as the owner's own writes, so that "effect applied, record lost" cannot
// happen: the PostgreSQL store (ledger/pgledger) implements it.
//
// An owner that does every effect of the action inside the transaction
// makes the action exactly once: if the transaction commits, the effect
// and the completed record are both kept; if it does not (the process
// died, the connection broke, the handler failed), neither is, and the
// action may run again. The store therefore treats an atomic action whose
// lease ran out as failed (retry), not as uncertain, unless its owner
// marked an effect outside the transaction (AtomicTx.MarkEffect).
type Atomic interface {
	Store
	// BeginAtomic marks the action, owned with token, as one whose effects
	// happen only inside the transaction it opens, and opens it. It fails
	// with ErrNotOwner when token is not current.
	BeginAtomic(ctx context.Context, k Key, token int64) (AtomicTx, error)
}

// AtomicTx is one owner's open transaction. Exactly one of Complete and
// Rollback must be called.
type AtomicTx interface {
	// Context returns ctx carrying the transaction, for the owner's
	// writes; the store's package says how to take it out (for
	// PostgreSQL, pgledger.Tx).
	Context(ctx context.Context) context.Context
	// Complete stores o as the action's outcome, fenced by the token,
	// inside the transaction, and commits. On ErrNotOwner, or any error
	// before the commit, it rolls back and nothing is applied. An error
	// wrapping ErrTxAborted means an owner's statement had failed in the
	// transaction before it; one wrapping ErrCommitUnknown means the
	// commit's answer was lost.
	Complete(ctx context.Context, o Outcome) error
	// Rollback abandons the transaction and every write in it.
	Rollback(ctx context.Context) error
	// MarkEffect records, fenced by the token, that the owner is about
	// to do an effect outside the transaction (a call to a provider, a
	// write elsewhere), which a rollback cannot undo. The write is
	// outside the transaction, durable when MarkEffect returns nil, and
	// bounded in time: should the owner then die, its action is
	// uncertain once the lease runs out, not failed, and is not run
	// again. The owner must not do the effect when MarkEffect reports
	// an error (ErrNotOwner when token is no longer current). Calling
	// it again is harmless.
	MarkEffect(ctx context.Context) error
}
