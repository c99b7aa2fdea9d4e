package idempotency

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/retrybudget/retrybudget/ledger"
)

// errAtomicStore is New's panic for Config.Atomic over a store that
// cannot hold a transaction.
var errAtomicStore = errors.New("idempotency: Config.Atomic needs a Store implementing ledger.Atomic, such as pgledger.Store")

// beginAtomic opens the action's transaction when Config.Atomic is set.
// It returns nil and true when it is not, and false after answering the
// request itself when the transaction cannot be opened (the handler has
// not run, so the action is failed, not uncertain).
func (g *guard) beginAtomic(w http.ResponseWriter, r *http.Request, k ledger.Key, token int64) (ledger.AtomicTx, bool) {
	if !g.s.Atomic {
		return nil, true
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), reserveTimeout)
	defer cancel()
	atx, err := g.s.Store.(ledger.Atomic).BeginAtomic(ctx, k, token)
	if err != nil {
		g.fail(ctx, k, token, false, "could not open the action's transaction")
		if errors.Is(err, ledger.ErrBusy) {
			// Not an outage: the store bounds its open transactions so
			// that its own statements always find a connection.
			busy().write(w)
			return nil, false
		}
		g.log(r.Context(), "begin", k, err)
		unavailable().write(w)
		return nil, false
	}
	return atx, true
}

// settleAtomic ends the transaction of an Atomic handler: it rolls back a
// failed answer (failed(o.Status)), recording the action failed, and
// otherwise completes the record and commits. It reports whether the
// handler's response may be delivered: false when the commit failed or
// its answer was lost, since the client must then retry to learn what
// happened. Either way the transaction's effects and the record went
// together, so the action is recorded failed (a no-op, refused by the
// fence, when the commit did apply): its retry replays the stored
// response or runs again. An effect the handler marked (effect, from
// MarkEffect) happened outside the transaction and was not rolled back
// with it: the action is then recorded uncertain instead, as without
// Atomic, and is not run again.
//
// A 4xx answered over a transaction one of the handler's statements had
// aborted (a unique violation it caught, answered 409) is the action's
// answer all the same: nothing of the transaction could commit, and a
// refusal needs none of it, so the answer is recorded outside the
// transaction and delivered. A 2xx or 3xx over an aborted transaction
// claims writes that were rolled back: the action is failed, as when the
// commit fails.
func (g *guard) settleAtomic(ctx context.Context, k ledger.Key, token int64, atx ledger.AtomicTx, o ledger.Outcome, effect bool) bool {
	if failed(o.Status) {
		g.rollback(ctx, k, atx)
		g.fail(ctx, k, token, effect, fmt.Sprintf("handler answered %d", o.Status))
		return true
	}
	err := atx.Complete(ctx, o)
	if err == nil {
		return true
	}
	if errors.Is(err, ledger.ErrTxAborted) && o.Status >= 400 {
		if err := g.s.Store.Complete(ctx, k, token, o); err != nil {
			g.log(ctx, "complete", k, err)
			return false
		}
		return true
	}
	g.log(ctx, "complete", k, err)
	f := ledger.Failure{EffectPossible: effect, Reason: "the completing transaction did not commit"}
	if err := g.s.Store.Fail(ctx, k, token, f); err != nil && !errors.Is(err, ledger.ErrNotOwner) {
		g.log(ctx, "fail", k, err)
	}
	return false
}

// rollback abandons the transaction, logging a failure.
func (g *guard) rollback(ctx context.Context, k ledger.Key, atx ledger.AtomicTx) {
	if err := atx.Rollback(ctx); err != nil {
		g.log(ctx, "rollback", k, err)
	}
}
