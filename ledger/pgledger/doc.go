// Package pgledger is the action ledger (ledger.Store) on PostgreSQL: one
// row per action in one table, for a fleet whose system of record is
// PostgreSQL. It is a module of its own, so the root module needs no SQL
// driver.
//
// Reserve creates an action's record with one INSERT ... ON CONFLICT DO
// NOTHING on the action's identity, so two owners never both create it,
// and takes an existing record over with one UPDATE whose decision and
// grant are atomic; every fenced write is one UPDATE
// conditioned on the owner's token; leases and expiry are judged by the
// database's clock. A committed write is as durable as the database makes
// it.
//
// Use it with a pgxpool.Pool and the deployment's fingerprint key, which a
// shared store requires (ledger.FingerprintKeys):
//
//	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
//	...
//	store, err := pgledger.New(pool, pgledger.Config{Schema: "payments", Config: ledger.Config{
//		FingerprintKeys: ledger.FingerprintKeys{[]byte(os.Getenv("RETRYBUDGET_FINGERPRINT_KEY"))},
//	}})
//	...
//	err = store.Migrate(ctx) // creates the schema, the table and its indexes; safe at every start
//	tr := retrybudget.New(retrybudget.Config{Ledger: retrybudget.LedgerConfig{Store: store}})
//
// Store also implements ledger.Atomic: the idempotency middleware's Atomic
// mode completes an action in the same transaction as the handler's own
// writes (Tx takes the transaction out of the handler's context). Open
// transactions are bounded below the pool (Config.MaxAtomic), so the
// store's own statements always find a connection, and shared out by
// tenant (Config.MaxAtomicPerTenant), so one tenant's slow handlers cannot
// hold them all. Run Purge periodically
// to delete expired records. The operator's CLI is cmd/retrybudget-pg.
package pgledger
