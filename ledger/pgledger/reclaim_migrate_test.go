package pgledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger/pgtest"
)

// A table made before grants recorded their owner's instance gains the
// column with Migrate; its rows read as granted without an instance, so a
// restarted owner never reclaims them early, while new grants are
// reclaimed as on a fresh table.
func TestMigrateAddsTheInstanceColumnToAnExistingTable(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.Pool(t)
	s := newStore(t, pool, pgledger.Config{})
	old := ledger.ReserveRequest{Key: keyA, Fingerprint: "f", Owner: "pod-1", Instance: "run-1", Lease: time.Hour}
	if _, err := s.Reserve(ctx, old); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "ALTER TABLE "+pgledger.DefaultTable+" DROP COLUMN instance, DROP COLUMN granted_reclaim"); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate over a table without the instance column: %v", err)
	}
	restarted := old
	restarted.Instance = "run-2"
	res, err := s.Reserve(ctx, restarted)
	if err != nil || res.Verdict != ledger.VerdictPending || res.Record.Instance != "" {
		t.Fatalf("a row from before the column: %s %+v (%v); want pending, no instance", res.Verdict, res.Record, err)
	}

	kB := ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-2"}
	first := ledger.ReserveRequest{Key: kB, Fingerprint: "f", Owner: "pod-1", Instance: "run-1", Lease: time.Hour, MarksSending: true}
	if _, err := s.Reserve(ctx, first); err != nil {
		t.Fatal(err)
	}
	first.Instance = "run-2"
	if res, err := s.Reserve(ctx, first); err != nil || res.Verdict != ledger.VerdictRetry || res.Record.Instance != "run-2" {
		t.Fatalf("a new grant after the migration: %s %+v (%v); want a retry reclaimed by run-2", res.Verdict, res.Record, err)
	}
}

// A table made before records kept a settle time gains its columns with
// Migrate; a row from before reads as never settling (the settle time of
// its sends was not kept), while a grant made after the migration marks
// and settles as on a fresh table.
func TestMigrateAddsTheSettleColumnsToAnExistingTable(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.Pool(t)
	s := newStore(t, pool, pgledger.Config{})
	old := ledger.ReserveRequest{Key: keyA, Fingerprint: "f", Owner: "pod-1", Instance: "run-1", Lease: time.Hour, MarksSending: true}
	first, err := s.Reserve(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.MarkSending(ctx, keyA, first.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "ALTER TABLE "+pgledger.DefaultTable+" DROP COLUMN settle_ms, DROP COLUMN settle_until, DROP COLUMN granted_settling"); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate over a table without the settle columns: %v", err)
	}
	restarted := old
	restarted.Instance, restarted.Reconciler = "run-2", true
	res, err := s.Reserve(ctx, restarted)
	if err != nil || res.Verdict != ledger.VerdictReconcile || res.Settling || !res.Record.SettleUntil.IsZero() {
		t.Fatalf("a row from before the columns: %s settling %t %+v (%v); want reconcile, not settling", res.Verdict, res.Settling, res.Record, err)
	}

	kB := ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-2"}
	b := ledger.ReserveRequest{Key: kB, Fingerprint: "f", Owner: "pod-1", Instance: "run-1", Lease: time.Hour, MarksSending: true}
	granted, err := s.Reserve(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.MarkSending(ctx, kB, granted.Token); err != nil {
		t.Fatal(err)
	}
	b.Instance, b.Reconciler = "run-2", true
	if res, err := s.Reserve(ctx, b); err != nil || res.Verdict != ledger.VerdictReconcile || !res.Settling || res.RetryAfter <= 0 {
		t.Fatalf("a new grant after the migration: %s settling %t retry after %s (%v); want reconcile inside the settle time", res.Verdict, res.Settling, res.RetryAfter, err)
	}
}

// A table made before records kept an operator's settlement gains the
// column with Migrate: its rows read as never settled, and an operator's
// resolution of one of them keeps its trail as on a fresh table.
func TestMigrateAddsTheSettlementColumnToAnExistingTable(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.Pool(t)
	s := newStore(t, pool, pgledger.Config{})
	held, err := s.Reserve(ctx, ledger.ReserveRequest{Key: keyA, Fingerprint: "f", Owner: "pod-1", Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Fail(ctx, keyA, held.Token, ledger.Failure{EffectPossible: true, Reason: "timeout"}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "ALTER TABLE "+pgledger.DefaultTable+" DROP COLUMN settlement"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, keyA); err == nil {
		t.Fatal("Get read a table without the settlement column: the test does not remove what the store reads")
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate over a table without the settlement column: %v", err)
	}
	rec, err := s.Get(ctx, keyA)
	if err != nil || rec.State != ledger.StateUncertain || rec.Settlement != nil {
		t.Fatalf("a row from before the column: %s %+v (%v); want uncertain, never settled", rec.State, rec.Settlement, err)
	}
	done := ledger.Reconcile(ctx, s, func(context.Context, ledger.Record) (ledger.Resolution, error) {
		return ledger.Resolution{State: ledger.StateCompleted, Outcome: ledger.Outcome{Status: 200},
			Settlement: &ledger.Settlement{By: "alice", Reason: "in the provider's log", Reference: "SM1"}}, nil
	}, []ledger.Record{rec}, "console:alice")
	if done[0].Err != nil || done[0].State != ledger.StateCompleted {
		t.Fatalf("settling the old row: %+v", done[0])
	}
	got, err := s.Get(ctx, keyA)
	if err != nil || got.Settlement == nil || got.Settlement.By != "alice" || got.Settlement.Reference != "SM1" || !got.Settlement.Applied {
		t.Fatalf("after settling the old row: %+v (%v)", got.Settlement, err)
	}
}
