package pgledger

import (
	"context"
	_ "embed" // the schema
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/jackc/pgx/v5"
)

//go:embed schema.sql
var schemaSQL string

// Migrate creates the Store's table and indexes if they do not exist. It
// runs in one transaction under a transaction-scoped advisory lock named
// after the table, so instances starting together do not race, and it is
// safe to run at every start. When Config.Schema names a schema that does
// not exist yet, Migrate creates it too.
func (s *Store) Migrate(ctx context.Context) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("ledger: postgres migrate: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit it is a no-op
	h := fnv.New64a()
	h.Write([]byte("retrybudget-ledger:" + s.table))
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(h.Sum64())); err != nil {
		return fmt.Errorf("ledger: postgres migrate: %w", err)
	}
	if s.cfg.Schema != "" {
		if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{s.cfg.Schema}.Sanitize()); err != nil {
			return fmt.Errorf("ledger: postgres migrate: %w", err)
		}
	}
	q := strings.NewReplacer("{{table}}", s.table,
		"{{expires_idx}}", pgx.Identifier{s.cfg.table() + "_expires_idx"}.Sanitize(),
		"{{stuck_idx}}", pgx.Identifier{s.cfg.table() + "_stuck_idx"}.Sanitize()).Replace(schemaSQL)
	if _, err := tx.Exec(ctx, q); err != nil {
		return fmt.Errorf("ledger: postgres migrate: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("ledger: postgres migrate: %w", err)
	}
	return nil
}
