// Command jobs runs payment jobs on River through retrybudget, against the
// machine's PostgreSQL (DATABASE_URL, else
// postgres://postgres@127.0.0.1:5432/test) and a local fake provider that
// answers some charges with 429 bursts, 503s and lost responses. Run it
// from the riverjobs directory:
//
//	go run ./examples/jobs
//
// It creates a schema of its own (riverjobs_example), migrates River into
// it with rivermigrate, inserts each order and its charge job in one
// transaction (River's InsertTx), works the jobs and prints how each ended
// and why, from the Report the Middleware wrote into the job's metadata.
// The schema is dropped at the end unless -keep is given.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger"
	"github.com/retrybudget/retrybudget/riverjobs"
	"github.com/retrybudget/retrybudget/riverjobs/internal/fakeprovider"
)

const schema = "riverjobs_example"

// ChargeArgs asks for the charge of one order.
type ChargeArgs struct {
	Tenant string `json:"tenant"`
	Order  string `json:"order"`
	Amount int    `json:"amount"`
}

// Kind implements river.JobArgs.
func (ChargeArgs) Kind() string { return "charge" }

// ChargeWorker charges an order at the provider. The Middleware has put
// the job's Action in ctx, so the Transport sends the same idempotency key
// on every run of the job.
type ChargeWorker struct {
	river.WorkerDefaults[ChargeArgs]
	client *http.Client
	url    string
}

// Work implements river.Worker.
func (w *ChargeWorker) Work(ctx context.Context, job *river.Job[ChargeArgs]) error {
	body, _ := json.Marshal(fakeprovider.Charge{Order: job.Args.Order, Amount: job.Args.Amount})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url+"/charges", bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return err // an *retrybudget.Error: the Middleware reads its Outcome
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("charge %s: status %d", job.Args.Order, resp.StatusCode)
	}
	return nil
}

func main() {
	keep := flag.Bool("keep", false, "keep the schema "+schema+" to inspect river_job")
	n := flag.Int("n", 20, "orders to charge")
	flag.Parse()
	if err := run(context.Background(), *n, *keep); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, n int, keep bool) error {
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		url = "postgres://postgres@127.0.0.1:5432/test"
	}
	pool, err := openSchema(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	if !keep {
		defer pool.Exec(context.WithoutCancel(ctx), "DROP SCHEMA "+schema+" CASCADE")
	}

	// A provider that drops or refuses some charges, and whose first
	// charges meet a 429 burst longer than MaxWait: those jobs are
	// snoozed until its Retry-After, not slept on.
	provider := fakeprovider.Start(fakeprovider.Faults{Unavailable: 0.1, Lost: 0.1, Seed: 3})
	defer provider.Close()
	provider.StartBurst(2 * time.Second)

	// The ledger lives on the jobs' own database, beside River's tables,
	// so an order, its job and its charge's record share one system of
	// record. Its fingerprints are sealed under a deployment secret
	// (ledger.FingerprintKeys): a fleet shares one; this one-process demo
	// draws its own.
	fpKey := make([]byte, 32)
	_, _ = rand.Read(fpKey) // crypto/rand never fails
	store, err := pgledger.New(pool, pgledger.Config{Schema: schema, Config: ledger.Config{FingerprintKeys: ledger.FingerprintKeys{fpKey}}})
	if err == nil {
		err = store.Migrate(ctx)
	}
	if err != nil {
		return err
	}

	mw := riverjobs.New(riverjobs.Config{TenantField: "tenant", KeyField: "order"})
	workers := river.NewWorkers()
	river.AddWorker(workers, &ChargeWorker{url: provider.URL, client: &http.Client{
		Transport: riverjobs.Record(retrybudget.New(retrybudget.Config{
			Ledger:  retrybudget.LedgerConfig{Store: store},
			MaxWait: time.Second,
		})),
	}})
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Schema:            schema,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 4}},
		Workers:           workers,
		Middleware:        []rivertype.Middleware{mw},
		RetryPolicy:       mw.RetryPolicy(nil),
		FetchPollInterval: 100 * time.Millisecond,
		Logger:            slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return err
	}
	events, cancel := client.Subscribe(river.EventKindJobCompleted, river.EventKindJobCancelled, river.EventKindJobSnoozed, river.EventKindJobFailed)
	defer cancel()

	// Each order and its charge job commit together, or not at all.
	for i := range n {
		a := ChargeArgs{Tenant: "acme", Order: fmt.Sprintf("order-%03d", i), Amount: 100 + i}
		if i == 3 {
			a.Amount = -5 // the provider rejects it: the job is cancelled
		}
		if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "INSERT INTO orders (id, tenant, amount) VALUES ($1, $2, $3)", a.Order, a.Tenant, a.Amount); err != nil {
				return err
			}
			_, err := client.InsertTx(ctx, tx, a, nil)
			return err
		}); err != nil {
			return err
		}
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	defer client.Stop(context.WithoutCancel(ctx))

	final := map[int64]bool{}
	timeout := time.After(2 * time.Minute)
	for len(final) < n {
		select {
		case ev := <-events:
			r, _, _ := riverjobs.ReportOf(ev.Job)
			fmt.Printf("job %3d %-9s %-10s attempts %d  %s\n", ev.Job.ID, ev.Kind[4:], r.Verb, r.Attempts, why(r))
			if ev.Job.FinalizedAt != nil {
				final[ev.Job.ID] = true
			}
		case <-timeout:
			return fmt.Errorf("%d of %d jobs finished within 2 minutes", len(final), n)
		}
	}
	s := provider.Stats()
	fmt.Printf("\n%d jobs finished; provider: %d requests, %d charges applied, %d duplicates, faults %v\n",
		n, s.Arrivals, s.Effects, s.Duplicates, s.Faults)
	if keep {
		fmt.Printf("schema %s kept: SELECT id, state, scheduled_at, metadata->'retrybudget' FROM %s.river_job;\n", schema, schema)
	}
	return nil
}

// why renders the reason and retry time of a report.
func why(r riverjobs.Report) string {
	s := r.Reason
	if r.RetryAt != nil {
		s = fmt.Sprintf("until %s: %s", r.RetryAt.Format("15:04:05.000"), s)
	}
	if r.Replayed {
		s = "replayed by the ledger " + s
	}
	return s
}

// openSchema recreates the example's schema, migrates River into it and
// creates the orders table.
func openSchema(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	for _, q := range []string{"DROP SCHEMA IF EXISTS " + schema + " CASCADE", "CREATE SCHEMA " + schema} {
		if _, err := pool.Exec(ctx, q); err != nil {
			pool.Close()
			return nil, fmt.Errorf("PostgreSQL at DATABASE_URL: %w", err)
		}
	}
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: schema})
	if err == nil {
		_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	}
	if err == nil {
		_, err = pool.Exec(ctx, "CREATE TABLE orders (id text PRIMARY KEY, tenant text NOT NULL, amount int NOT NULL)")
	}
	if err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}
