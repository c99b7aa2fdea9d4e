package pgledger_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/ledgertest"
	"github.com/retrybudget/retrybudget/ledger/pgledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger/pgtest"
)

var keyA = ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-1"}

// TestMigrateConcurrentAndRepeated pins that instances starting together
// may all run Migrate, and that running it again changes nothing.
func TestMigrateConcurrentAndRepeated(t *testing.T) {
	pool := pgtest.Pool(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = unmigrated(t, pool, pgledger.Config{}).Migrate(t.Context()) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Migrate %d: %v", i, err)
		}
	}
	s := newStore(t, pool, pgledger.Config{})
	if _, err := s.Reserve(t.Context(), ledger.ReserveRequest{Key: keyA, Fingerprint: "f"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	if _, err := s.Get(t.Context(), keyA); err != nil {
		t.Fatalf("record lost by a second Migrate: %v", err)
	}
}

// TestSchemaAndTable pins Config.Schema and Config.Table: two stores in
// one database with different tables are two ledgers.
func TestSchemaAndTable(t *testing.T) {
	pool := pgtest.Pool(t)
	var schema string
	if err := pool.QueryRow(t.Context(), "SELECT current_schema()").Scan(&schema); err != nil {
		t.Fatal(err)
	}
	a := newStore(t, pool, pgledger.Config{Schema: schema, Table: "Ledger_A"})
	b := newStore(t, pool, pgledger.Config{Table: "ledger_b"})
	if _, err := a.Reserve(t.Context(), ledger.ReserveRequest{Key: keyA, Fingerprint: "f"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(t.Context(), keyA); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("a record in table a is seen in table b: %v", err)
	}
}

// TestPurgeDeletesOnlyExpired pins retention by index: Purge deletes the
// expired rows in batches and leaves live ones.
func TestPurgeDeletesOnlyExpired(t *testing.T) {
	pool := pgtest.Pool(t)
	s := newStore(t, pool, pgledger.Config{})
	for i := range 5 {
		res, err := s.Reserve(t.Context(), ledger.ReserveRequest{Key: ledger.Key{Key: strconv.Itoa(i)}, Fingerprint: "f", Lease: short / 2, Retention: short})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(t.Context(), ledger.Key{Key: strconv.Itoa(i)}, res.Token, ledger.Outcome{Status: 200}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Reserve(t.Context(), ledger.ReserveRequest{Key: keyA, Fingerprint: "f", Retention: time.Hour}); err != nil {
		t.Fatal(err)
	}
	ledgertest.WaitClock(t, "database clock", short+short/2, func() (time.Time, error) { return dbNow(t.Context(), pool) })
	n1, err := s.Purge(t.Context(), 3)
	if err != nil || n1 != 3 {
		t.Fatalf("Purge(3) = %d, %v", n1, err)
	}
	n2, err := s.Purge(t.Context(), 0)
	if err != nil || n2 != 2 {
		t.Fatalf("Purge(0) = %d, %v", n2, err)
	}
	var rows int
	if err := pool.QueryRow(t.Context(), "SELECT count(*) FROM retrybudget_ledger").Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("%d rows left, %v; want the live one", rows, err)
	}
}

// TestCallsAreBounded pins that a call blocked on the database (here by a
// row lock another transaction holds) fails after Config.Timeout instead
// of waiting for ever.
func TestCallsAreBounded(t *testing.T) {
	pool := pgtest.Pool(t)
	s := newStore(t, pool, pgledger.Config{Timeout: 300 * time.Millisecond})
	res, err := s.Reserve(t.Context(), ledger.ReserveRequest{Key: keyA, Fingerprint: "f"})
	if err != nil {
		t.Fatal(err)
	}
	tx := lockRow(t, pool, keyA)
	start := time.Now()
	err = s.Complete(t.Context(), keyA, res.Token, ledger.Outcome{Status: 200})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Complete under a held lock: %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Complete returned after %s", d)
	}
	if err := tx.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	// A reservation reads the record without locking it when it decides
	// to write nothing (TestPendingNotHeldByRowLock), so the table itself
	// is held here.
	tx, err = pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(t.Context(), "LOCK TABLE retrybudget_ledger IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reserve(t.Context(), ledger.ReserveRequest{Key: keyA, Fingerprint: "f"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Reserve under a held lock: %v, want context.DeadlineExceeded", err)
	}
}

// TestPendingNotHeldByRowLock pins that a second reservation of an action
// whose lease is live answers pending at once, though another transaction
// holds the row locked (SELECT … FOR UPDATE, an operator's session, say):
// it writes nothing, so it takes no lock and waits for none. (A write of
// the row not yet committed, such as an atomic owner's Complete before its
// commit, is still waited for: the creation must know whether the row
// stays.)
func TestPendingNotHeldByRowLock(t *testing.T) {
	pool := pgtest.Pool(t)
	s := newStore(t, pool, pgledger.Config{Timeout: 5 * time.Second})
	if _, err := s.Reserve(t.Context(), ledger.ReserveRequest{Key: keyA, Fingerprint: "f", Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	lockRow(t, pool, keyA)
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	res, err := s.Reserve(ctx, ledger.ReserveRequest{Key: keyA, Fingerprint: "f", Owner: "second"})
	if err != nil {
		t.Fatalf("Reserve beside a held row lock: %v; want pending at once", err)
	}
	if res.Verdict != ledger.VerdictPending {
		t.Fatalf("Reserve beside a held row lock: %v; want pending", res.Verdict)
	}
}

// TestCorruptState pins that a state this version cannot read is an
// error, never a guess, and never sends.
func TestCorruptState(t *testing.T) {
	pool := pgtest.Pool(t)
	s := newStore(t, pool, pgledger.Config{})
	if _, err := s.Reserve(t.Context(), ledger.ReserveRequest{Key: keyA, Fingerprint: "f"}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(t.Context(), "UPDATE retrybudget_ledger SET state = 'bogus'"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(t.Context(), keyA); !errors.Is(err, ledger.ErrCorrupt) {
		t.Errorf("Get: %v, want ErrCorrupt", err)
	}
	if _, err := s.Reserve(t.Context(), ledger.ReserveRequest{Key: keyA, Fingerprint: "f", KeysHonoured: true}); !errors.Is(err, ledger.ErrCorrupt) {
		t.Errorf("Reserve: %v, want ErrCorrupt", err)
	}
}

// Migrate creates the schema Config.Schema names when it does not exist
// yet, then the table in it.
func TestMigrateCreatesTheSchema(t *testing.T) {
	pool := pgtest.Pool(t)
	schema := fmt.Sprintf("rb_new_schema_%d", time.Now().UnixNano())
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
	})
	s := unmigrated(t, pool, pgledger.Config{Schema: schema})
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate into a schema that does not exist: %v", err)
	}
	if _, err := s.Reserve(t.Context(), ledger.ReserveRequest{Key: keyA, Fingerprint: "f"}); err != nil {
		t.Fatalf("Reserve in the new schema: %v", err)
	}
	var n int
	if err := pool.QueryRow(t.Context(), "SELECT count(*) FROM "+schema+".retrybudget_ledger").Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows in %s.retrybudget_ledger: %d, %v; want 1", schema, n, err)
	}
}
