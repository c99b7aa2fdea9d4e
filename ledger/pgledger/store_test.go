package pgledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/retrybudget/retrybudget/ledger/ledgertest"
	"github.com/retrybudget/retrybudget/ledger/pgledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger/pgtest"
)

// short is the lease and retention the suite waits out on the database's
// clock: long enough that a case's few queries fit in it even on a stalled,
// loaded machine.
const short = 400 * time.Millisecond

// unmigrated returns a Store with the tests' fingerprint key added to cfg,
// failing t when New refuses the configuration.
func unmigrated(t testing.TB, db pgledger.DB, cfg pgledger.Config) *pgledger.Store {
	t.Helper()
	cfg.FingerprintKeys = append(cfg.FingerprintKeys, ledgertest.FingerprintKeys()...)
	s, err := pgledger.New(db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newStore returns a migrated Store in a fresh schema.
func newStore(t testing.TB, pool *pgxpool.Pool, cfg pgledger.Config) *pgledger.Store {
	t.Helper()
	s := unmigrated(t, pool, cfg)
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// dbNow reads the database's clock.
func dbNow(ctx context.Context, pool *pgxpool.Pool) (time.Time, error) {
	var now time.Time
	err := pool.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&now)
	return now, err
}

func newHarness(t *testing.T) ledgertest.Harness {
	pool := pgtest.Pool(t)
	s := newStore(t, pool, pgledger.Config{})
	return ledgertest.Harness{
		Store: s,
		Advance: func(t *testing.T, d time.Duration) {
			ledgertest.WaitClock(t, "database clock", d, func() (time.Time, error) { return dbNow(t.Context(), pool) })
		},
		WaitGone: ledgertest.WaitGoneByGet(s),
		Short:    short,
	}
}

func TestConformance(t *testing.T) {
	ledgertest.Run(t, newHarness)
}
