package pgledger_test

import (
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
