package riverjobs_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// placeOrder records an order and asks for its charge in one PostgreSQL
// transaction: River's InsertTx writes the job with the business row, so
// there is never an order without its charge job, nor a charge job for an
// order that was rolled back.
func placeOrder(ctx context.Context, h *harness, args PaymentArgs, commit bool) error {
	tx, err := h.db.Pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) // a no-op after Commit
	if _, err := tx.Exec(ctx, `INSERT INTO orders (id, tenant, amount) VALUES ($1, $2, $3)`,
		args.Order, args.Tenant, args.Amount); err != nil {
		return err
	}
	if _, err := h.client.InsertTx(ctx, tx, args, nil); err != nil {
		return err
	}
	if !commit {
		return errors.New("order abandoned") // the deferred Rollback drops both rows
	}
	return tx.Commit(ctx)
}

func TestInsertTxWithTheBusinessRow(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	ctx := context.Background()
	if _, err := h.db.Pool.Exec(ctx, `CREATE TABLE orders (id text PRIMARY KEY, tenant text NOT NULL, amount int NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if err := placeOrder(ctx, h, PaymentArgs{Tenant: "acme", Order: "kept", Amount: 10}, true); err != nil {
		t.Fatal(err)
	}
	if err := placeOrder(ctx, h, PaymentArgs{Tenant: "acme", Order: "dropped", Amount: 10}, false); err == nil {
		t.Fatal("abandoned order: no error")
	}

	var jobs int
	if err := h.db.Pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE args->>'order' = 'dropped'`).Scan(&jobs); err != nil {
		t.Fatal(err)
	}
	if jobs != 0 {
		t.Errorf("rolled-back order left %d jobs; want 0", jobs)
	}
	var id int64
	err := h.db.Pool.QueryRow(ctx, `SELECT id FROM river_job WHERE args->>'order' = 'kept'`).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		t.Fatal("committed order has no job")
	} else if err != nil {
		t.Fatal(err)
	}
	h.await(t, id, eventWait, river.EventKindJobCompleted)
	s := h.provider.Stats()
	if s.PerOrder["kept"] != 1 || s.PerOrder["dropped"] != 0 {
		t.Errorf("effects kept %d, dropped %d; want 1, 0", s.PerOrder["kept"], s.PerOrder["dropped"])
	}
}
