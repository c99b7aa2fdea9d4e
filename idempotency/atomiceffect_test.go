package idempotency_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/retrybudget/retrybudget/idempotency"
	"github.com/retrybudget/retrybudget/ledger"
)

// atomicMemory is a Memory store with a stand-in for a transaction: its
// Complete completes the record unless commitErr says the commit failed.
// What matters here is the effect outside any transaction.
type atomicMemory struct {
	*ledger.Memory
	commitErr error
}

func (s *atomicMemory) BeginAtomic(_ context.Context, k ledger.Key, token int64) (ledger.AtomicTx, error) {
	return &memoryTx{s: s, k: k, token: token}, nil
}

type memoryTx struct {
	s     *atomicMemory
	k     ledger.Key
	token int64
}

func (tx *memoryTx) Context(ctx context.Context) context.Context { return ctx }

func (tx *memoryTx) Complete(ctx context.Context, o ledger.Outcome) error {
	if tx.s.commitErr != nil {
		return tx.s.commitErr
	}
	return tx.s.Memory.Complete(ctx, tx.k, tx.token, o)
}

func (tx *memoryTx) Rollback(context.Context) error { return nil }

// An Atomic handler that did an effect outside the transaction (a charge at
// a provider) and marked it with MarkEffect is never run again by a retry,
// whether it then answered a failure, panicked, or its commit failed: the
// action is recorded uncertain, as without Atomic, not failed.
func TestAtomicHandlerThatMarkedAnEffectIsNotRunAgain(t *testing.T) {
	for _, tt := range []struct {
		name      string
		commitErr error
		end       func(w http.ResponseWriter)
	}{
		{name: "answered 503", end: func(w http.ResponseWriter) { w.WriteHeader(http.StatusServiceUnavailable) }},
		{name: "panicked", end: func(http.ResponseWriter) { panic("handler failed after its charge") }},
		{name: "commit failed", commitErr: errors.New("commit failed"), end: func(w http.ResponseWriter) { w.WriteHeader(http.StatusCreated) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			store := &atomicMemory{Memory: ledger.NewMemory(ledger.MemoryConfig{Now: clock.Now}), commitErr: tt.commitErr}
			var charges atomic.Int32
			e := newEnv(t, idempotency.Config{Store: store, Atomic: true}, func(run int, w http.ResponseWriter, r *http.Request) {
				charges.Add(1) // the effect, outside the transaction
				idempotency.MarkEffect(r.Context())
				if run == 1 {
					tt.end(w)
					return
				}
				created(run, w, r)
			})
			e.send(request{})
			store.commitErr = nil
			res := e.send(request{}) // the client's retry
			if n := charges.Load(); n != 1 {
				t.Fatalf("%d charges, want 1 (retry answered %d %s)", n, res.Code, res.Body)
			}
			rec, err := store.Get(t.Context(), thingsKey("k1"))
			if err != nil || rec.State != ledger.StateUncertain {
				t.Fatalf("record %+v, %v; want uncertain", rec, err)
			}
		})
	}
}
