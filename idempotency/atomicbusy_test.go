package idempotency_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/retrybudget/retrybudget/idempotency"
	"github.com/retrybudget/retrybudget/ledger"
)

// busyStore is an Atomic store whose transaction slots are all taken.
type busyStore struct{ *ledger.Memory }

func (busyStore) BeginAtomic(context.Context, ledger.Key, int64) (ledger.AtomicTx, error) {
	return nil, fmt.Errorf("%w: 2 open", ledger.ErrBusy)
}

// A request that finds every transaction slot of an Atomic store taken is
// answered at once 503 TypeBusy with Retry-After: 1, not as a ledger
// outage; the handler does not run, and the same request is run once a
// slot is free.
func TestAtomicBusyIsAnsweredAtOnce(t *testing.T) {
	mem := ledger.NewMemory(ledger.MemoryConfig{})
	e := newEnv(t, idempotency.Config{Store: busyStore{mem}, Atomic: true}, created)
	res := e.send(request{})
	if res.Code != http.StatusServiceUnavailable || problemBody(t, res).Type != idempotency.TypeBusy || res.Header().Get("Retry-After") != "1" {
		t.Fatalf("%d %s Retry-After %q; want 503 TypeBusy, Retry-After 1", res.Code, res.Body, res.Header().Get("Retry-After"))
	}
	if n := e.runs.Load(); n != 0 {
		t.Fatalf("handler ran %d times", n)
	}
	rec, err := mem.Get(t.Context(), thingsKey("k1"))
	if err != nil || rec.State != ledger.StateFailed {
		t.Fatalf("record %v %v; want failed (nothing ran, may run again)", rec.State, err)
	}
}
