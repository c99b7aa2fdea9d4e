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
	// markErr, when set, is MarkEffect's answer: the mark was not written.
	markErr error
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

// MarkEffect has nothing to write: a Memory record whose lease ran out is
// uncertain, never failed, and this stand-in forgets nothing on a crash.
func (tx *memoryTx) MarkEffect(context.Context) error { return tx.s.markErr }

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

// When an Atomic handler's mark cannot be written, MarkEffect reports it
// (wrapping the store's error) and the handler, as documented, does not do
// its effect and answers 503: the action is failed, not uncertain, and the
// client's retry runs it once.
func TestAtomicMarkEffectFailureLeavesTheActionFailed(t *testing.T) {
	clock := newFakeClock()
	store := &atomicMemory{Memory: ledger.NewMemory(ledger.MemoryConfig{Now: clock.Now}), markErr: ledger.ErrBusy}
	var charges atomic.Int32
	var markErr error
	e := newEnv(t, idempotency.Config{Store: store, Atomic: true}, func(run int, w http.ResponseWriter, r *http.Request) {
		if err := idempotency.MarkEffect(r.Context()); err != nil {
			markErr = err
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		charges.Add(1)
		created(run, w, r)
	})
	if res := e.send(request{}); res.Code != http.StatusServiceUnavailable {
		t.Fatalf("first run answered %d %s; want the handler's 503", res.Code, res.Body)
	}
	if !errors.Is(markErr, ledger.ErrBusy) {
		t.Fatalf("MarkEffect: %v; want the store's error", markErr)
	}
	rec, err := store.Get(t.Context(), thingsKey("k1"))
	if err != nil || rec.State != ledger.StateFailed {
		t.Fatalf("record %v %v; want failed (no effect)", rec.State, err)
	}
	store.markErr = nil
	if res := e.send(request{}); res.Code != http.StatusCreated {
		t.Fatalf("retry answered %d %s; want 201", res.Code, res.Body)
	}
	if n := charges.Load(); n != 1 {
		t.Fatalf("%d charges, want 1", n)
	}
}
