package pgledger_test

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger"
)

// The ledger on PostgreSQL: one pool, the per-deployment fingerprint key
// from the environment, the table created once at start-up, then the
// store behind the Transport like any other. (Compiled only: it needs a
// PostgreSQL.)
func ExampleNew() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	store, err := pgledger.New(pool, pgledger.Config{
		Config: ledger.Config{
			FingerprintKeys: ledger.FingerprintKeys{[]byte(os.Getenv("RETRYBUDGET_FINGERPRINT_KEY"))},
		},
	})
	if err != nil {
		fmt.Println(err) // wraps ledger.ErrNoFingerprintKey without the secret
		return
	}
	// Safe at every start: idempotent, under an advisory lock.
	if err := store.Migrate(ctx); err != nil {
		fmt.Println(err)
		return
	}
	client := &http.Client{Transport: retrybudget.New(retrybudget.Config{
		Ledger: retrybudget.LedgerConfig{Store: store},
	})}
	ctx = retrybudget.WithAction(ctx, retrybudget.Action{Tenant: "acme", Operation: "refund", Key: "refund-88"})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.example.com/v1/refunds", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	fmt.Println(resp.Status)
}
