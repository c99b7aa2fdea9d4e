package pgledger_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger/pgtest"
)

// reserveOwned reserves a new action, of a tenant of its own, and returns
// its key and token. Each action has its own tenant so that the bound on
// all transactions is met before any tenant's share of it.
func reserveOwned(t *testing.T, s *pgledger.Store, i int) (ledger.Key, int64) {
	t.Helper()
	k := ledger.Key{Tenant: fmt.Sprint("t", i), Operation: "op", Key: fmt.Sprint("k", i)}
	res, err := s.Reserve(t.Context(), ledger.ReserveRequest{Key: k, Fingerprint: "fp", Owner: "o", Lease: time.Minute})
	if err != nil || !res.Verdict.Owns() {
		t.Fatalf("reserve %v: %v %v", k, res.Verdict, err)
	}
	return k, res.Token
}

// Open atomic transactions are bounded below the pool, so that the
// store's own statements always find a connection: past the bound,
// BeginAtomic waits AtomicWait for a slot, then fails with ErrBusy having
// marked nothing; a slot is free again once its transaction ends.
func TestBeginAtomicIsBounded(t *testing.T) {
	pool := pgtest.Pool(t)
	s := newStore(t, pool, pgledger.Config{AtomicWait: 50 * time.Millisecond})
	// pgx's default pool: max(4, NumCPU) connections, two left to the store.
	bound := max(int(pool.Stat().MaxConns())-2, 1)
	var txs []ledger.AtomicTx
	for i := range bound {
		k, tok := reserveOwned(t, s, i)
		atx, err := s.BeginAtomic(t.Context(), k, tok)
		if err != nil {
			t.Fatalf("transaction %d of %d: %v", i+1, bound, err)
		}
		txs = append(txs, atx)
	}
	k, tok := reserveOwned(t, s, bound)
	// The store's own statements still run while every slot is taken.
	if _, err := s.Get(t.Context(), k); err != nil {
		t.Fatalf("Get with every transaction slot taken: %v", err)
	}
	if _, err := s.BeginAtomic(t.Context(), k, tok); !errors.Is(err, ledger.ErrBusy) {
		t.Fatalf("BeginAtomic past the bound: %v; want ErrBusy", err)
	}
	if err := txs[0].Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	atx, err := s.BeginAtomic(t.Context(), k, tok)
	if err != nil {
		t.Fatalf("BeginAtomic after a slot was freed: %v", err)
	}
	txs = append(txs[1:], atx)
	for _, atx := range txs {
		if err := atx.Rollback(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

// An atomic transaction has a deadline: the context it gives the owner's
// writes ends then, and a Complete after it rolls back, so one slow
// handler cannot hold its connection for ever.
func TestAtomicTransactionHasADeadline(t *testing.T) {
	pool := pgtest.Pool(t)
	s := newStore(t, pool, pgledger.Config{AtomicTimeout: 100 * time.Millisecond})
	k, tok := reserveOwned(t, s, 0)
	atx, err := s.BeginAtomic(t.Context(), k, tok)
	if err != nil {
		t.Fatal(err)
	}
	ctx := atx.Context(context.Background())
	if _, ok := ctx.Deadline(); !ok {
		t.Fatal("the transaction's context has no deadline")
	}
	<-ctx.Done() // the deadline, not a sleep: the context says when
	if err := atx.Complete(context.Background(), ledger.Outcome{Status: 201}); err == nil {
		t.Fatal("Complete after the deadline committed")
	}
	rec, err := s.Get(t.Context(), k)
	if err != nil || rec.State == ledger.StateCompleted {
		t.Fatalf("record after a Complete past the deadline: %v %v; want not completed", rec.State, err)
	}
}
