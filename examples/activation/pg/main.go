// Command pg is examples/activation on PostgreSQL: the same service
// (package app), with the ledger (pgledger) and the activations in one
// database shared by every instance, and each activation run in the
// transaction that completes its idempotency record
// (idempotency.Config.Atomic): the activation row and the completed record
// commit together, so a commit refused or lost after the destination's
// sync leaves both or neither, and a retry on any instance replays the
// answer or runs again, the destination deduplicating the sync by its key.
// It is a module of its own so that pgx stays out of the root go.mod.
//
// Usage (from this directory):
//
//	go run . -postgres postgres://user@host:5432/db [-addr 127.0.0.1:8080] [-destination http://127.0.0.1:9090] [-slow 5s] [-retention 24h]
//
// -postgres defaults to DATABASE_URL. ACTIVATION_FINGERPRINT_KEY must hold
// the deployment's fingerprint key, the same on every instance. The tables
// (retrybudget_ledger, activation_activations) are created at start-up in
// the first schema of the connection's search_path.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/retrybudget/retrybudget/examples/activation/app"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger"
)

// fingerprintKeyEnv names the environment variable holding the ledger's
// fingerprint key, as in examples/activation.
const fingerprintKeyEnv = "ACTIVATION_FINGERPRINT_KEY"

func main() {
	var (
		addr, postgres, destination string
		slow, retention             time.Duration
	)
	flag.StringVar(&addr, "addr", "127.0.0.1:8080", "address to listen on")
	flag.StringVar(&postgres, "postgres", os.Getenv("DATABASE_URL"), "PostgreSQL URL (postgres://user:password@host:port/db); default DATABASE_URL")
	flag.StringVar(&destination, "destination", "", "base URL of the destination (go run ./examples/activation/provider); empty starts one on loopback in this process")
	flag.DurationVar(&slow, "slow", 5*time.Second, "how long the embedded destination takes to sync audience_slow")
	flag.DurationVar(&retention, "retention", 0, "how long an Idempotency-Key is remembered (0: 24h)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	err := func() error {
		cfg, closeDB, err := open(ctx, postgres, os.Getenv(fingerprintKeyEnv))
		if err != nil {
			return err
		}
		defer closeDB()
		cfg.Destination, cfg.Retention, cfg.Logger = destination, retention, logger
		return app.Serve(ctx, app.ServeConfig{Addr: addr, App: cfg, Slow: slow, Ledger: "postgres " + redacted(postgres)})
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "activation:", err)
		os.Exit(1)
	}
}

// open connects to the database at dsn, creates the tables, and returns
// the service's configuration on it (the ledger, the activations, Atomic)
// and a function that closes the pool.
func open(ctx context.Context, dsn, fingerprintKey string) (app.Config, func(), error) {
	if dsn == "" {
		return app.Config{}, nil, errors.New("no database: set -postgres or DATABASE_URL")
	}
	if fingerprintKey == "" {
		return app.Config{}, nil, fmt.Errorf("a PostgreSQL ledger needs a fingerprint key: set %s to a secret of at least 16 bytes", fingerprintKeyEnv)
	}
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The parser's error may quote the URL, password included.
		return app.Config{}, nil, fmt.Errorf("-postgres: not a PostgreSQL connection string (%s)", redacted(dsn))
	}
	db, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return app.Config{}, nil, fmt.Errorf("postgres %s: %w", redacted(dsn), err)
	}
	cfg, err := config(ctx, db, fingerprintKey)
	if err != nil {
		db.Close()
		return app.Config{}, nil, err
	}
	return cfg, db.Close, nil
}

// config migrates the ledger and the activations on db and returns the
// service's configuration on them.
func config(ctx context.Context, db *pgxpool.Pool, fingerprintKey string) (app.Config, error) {
	store, err := pgledger.New(db, pgledger.Config{Config: ledger.Config{
		FingerprintKeys: ledger.FingerprintKeys{[]byte(fingerprintKey)}}})
	if err != nil {
		return app.Config{}, err
	}
	if err := store.Migrate(ctx); err != nil {
		return app.Config{}, err
	}
	if err := migrateActivations(ctx, db); err != nil {
		return app.Config{}, err
	}
	return app.Config{Store: store, Activations: pgActivations{db: db}, Atomic: true}, nil
}

// redacted returns dsn for a log line, without the password a URL may
// carry.
func redacted(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		return u.Redacted()
	}
	return "(a key=value connection string)"
}
