// Package pgtest gives the riverjobs tests a real PostgreSQL: the server
// named by DATABASE_URL, else the one on this machine
// (postgres://postgres@127.0.0.1:5432/test). Each test gets a schema of its
// own, with River's tables migrated into it by River's own migrator
// (rivermigrate), dropped when the test ends.
//
// Without a reachable server the test is skipped with a message saying so,
// unless RETRYBUDGET_REQUIRE_POSTGRES is true, in which case it fails: CI
// sets it so that a missing PostgreSQL never turns these tests into silent
// skips.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/ledgertest"
	"github.com/retrybudget/retrybudget/ledger/pgledger"

	"github.com/retrybudget/retrybudget/internal/testenv"
)

// RequireEnv is the environment variable that turns a skip (no
// PostgreSQL) into a test failure.
const RequireEnv = "RETRYBUDGET_REQUIRE_POSTGRES"

// DefaultURL is the machine's PostgreSQL, used when DATABASE_URL is unset.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test"

// URL returns DATABASE_URL, or DefaultURL when it is unset.
func URL() string {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// DB is one test's schema on the server.
type DB struct {
	// URL is the server's connection string.
	URL string
	// Schema is the test's schema, holding River's tables.
	Schema string
	// Pool connects to the server with search_path set to Schema.
	Pool *pgxpool.Pool
}

// Open connects to url with search_path set to schema.
func Open(ctx context.Context, url, schema string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}

// New creates a fresh schema for t, migrates River into it and returns it.
// The schema and the pool are dropped and closed by t.Cleanup.
func New(t testing.TB) *DB {
	t.Helper()
	url := URL()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		testenv.Unavailable(t, RequireEnv, fmt.Sprintf("pgtest: no PostgreSQL at %s: %v (set DATABASE_URL)", redact(url), err))
	}
	defer admin.Close(context.Background())
	var b [6]byte
	rand.Read(b[:])
	schema := "riverjobs_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("pgtest: create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("pgtest: drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("pgtest: drop schema %s: %v", schema, err)
		}
	})
	pool, err := Open(ctx, url, schema, 0)
	if err != nil {
		t.Fatalf("pgtest: pool: %v", err)
	}
	t.Cleanup(pool.Close)
	if err := Migrate(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
	return &DB{URL: url, Schema: schema, Pool: pool}
}

// Migrate runs River's migrations up into schema with River's migrator,
// and creates the PostgreSQL ledger's table beside River's (the ledger on
// the same database as the jobs).
func Migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: schema})
	if err != nil {
		return fmt.Errorf("pgtest: migrator: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("pgtest: migrate River: %w", err)
	}
	store, err := Ledger(pool, schema)
	if err != nil {
		return err
	}
	if err := store.Migrate(ctx); err != nil {
		return fmt.Errorf("pgtest: migrate the ledger: %w", err)
	}
	return nil
}

// Ledger returns the PostgreSQL ledger in schema, sealing fingerprints
// with the tests' key (ledgertest.FingerprintKeys).
func Ledger(pool *pgxpool.Pool, schema string) (*pgledger.Store, error) {
	return pgledger.New(pool, pgledger.Config{Schema: schema, Config: ledger.Config{FingerprintKeys: ledgertest.FingerprintKeys()}})
}

// redact drops the password from url, for messages.
func redact(url string) string {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return "(unparsable DATABASE_URL)"
	}
	return fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
}
