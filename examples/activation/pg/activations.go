package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/retrybudget/retrybudget/examples/activation/app"
	"github.com/retrybudget/retrybudget/ledger/pgledger"
)

// pgTimeout bounds each statement of pgActivations.
const pgTimeout = 5 * time.Second

// activationsSchema is the activations' table, beside the ledger's.
const activationsSchema = `CREATE TABLE IF NOT EXISTS activation_activations (
	tenant     text NOT NULL,
	id         text NOT NULL,
	activation jsonb NOT NULL,
	PRIMARY KEY (tenant, id)
)`

// pgActivations keeps activations in PostgreSQL. Put writes through the
// action's transaction when the context carries one (pgledger.Tx, under
// the idempotency middleware's Config.Atomic), so that the activation and
// the action's completed record commit together or not at all.
type pgActivations struct {
	db *pgxpool.Pool
}

// migrateActivations creates the table if it does not exist, under an
// advisory lock so that instances starting together do not race.
func migrateActivations(ctx context.Context, db *pgxpool.Pool) error {
	ctx, cancel := context.WithTimeout(ctx, pgTimeout)
	defer cancel()
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext('activation_activations'))"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, activationsSchema)
		return err
	})
	if err != nil {
		return fmt.Errorf("activation: migrate: %w", err)
	}
	return nil
}

// Put implements app.Activations.
func (s pgActivations) Put(ctx context.Context, tenant string, a app.Activation) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, pgTimeout)
	defer cancel()
	const q = `INSERT INTO activation_activations (tenant, id, activation) VALUES ($1, $2, $3)
		ON CONFLICT (tenant, id) DO UPDATE SET activation = EXCLUDED.activation`
	if tx, ok := pgledger.Tx(ctx); ok {
		_, err = tx.Exec(ctx, q, tenant, a.ID, b)
	} else {
		_, err = s.db.Exec(ctx, q, tenant, a.ID, b)
	}
	if err != nil {
		return fmt.Errorf("activation: postgres put: %w", err)
	}
	return nil
}

// Get implements app.Activations.
func (s pgActivations) Get(ctx context.Context, tenant, id string) (app.Activation, error) {
	ctx, cancel := context.WithTimeout(ctx, pgTimeout)
	defer cancel()
	var b []byte
	err := s.db.QueryRow(ctx, "SELECT activation FROM activation_activations WHERE tenant = $1 AND id = $2", tenant, id).Scan(&b)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return app.Activation{}, app.ErrNotFound
	case err != nil:
		return app.Activation{}, fmt.Errorf("activation: postgres get: %w", err)
	}
	var a app.Activation
	if err := json.Unmarshal(b, &a); err != nil {
		return app.Activation{}, fmt.Errorf("activation: postgres get: %w", err)
	}
	return a, nil
}
