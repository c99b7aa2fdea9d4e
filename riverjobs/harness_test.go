package riverjobs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/riverjobs"
	"github.com/retrybudget/retrybudget/riverjobs/internal/fakeprovider"
	"github.com/retrybudget/retrybudget/riverjobs/internal/pgtest"
)

// PaymentArgs asks for one charge of an order.
type PaymentArgs struct {
	Tenant string `json:"tenant"`
	Order  string `json:"order"`
	Amount int    `json:"amount"`
}

// Kind implements river.JobArgs.
func (PaymentArgs) Kind() string { return "payment" }

// paymentConfig names the Action of a payment job: the tenant and the
// order from its args.
var paymentConfig = riverjobs.Config{TenantField: "tenant", KeyField: "order"}

// PaymentWorker charges an order at the provider, under the job's Action.
type PaymentWorker struct {
	river.WorkerDefaults[PaymentArgs]
	Client *http.Client
	URL    string
	// After, when set, runs after a successful charge; its error fails the
	// job as a worker's own failure would.
	After func(job *river.Job[PaymentArgs]) error
	// Failed, when set, runs when the charge failed with err, before the
	// worker returns it: the rest of a run's work, however long it takes.
	Failed func(err error)
}

// Work implements river.Worker.
func (w *PaymentWorker) Work(ctx context.Context, job *river.Job[PaymentArgs]) error {
	body, _ := json.Marshal(fakeprovider.Charge{Order: job.Args.Order, Amount: job.Args.Amount})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL+"/charges", bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := w.Client.Do(req)
	if err != nil {
		if w.Failed != nil {
			w.Failed(err)
		}
		return err
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		// The Record wrapper told the Middleware why; this error only
		// names the status for River's error list.
		return fmt.Errorf("charge %s: status %d", job.Args.Order, resp.StatusCode)
	}
	if w.After != nil {
		return w.After(job)
	}
	return nil
}

// harness is one River client working payment jobs against a fake
// provider, in a schema of its own.
type harness struct {
	db       *pgtest.DB
	provider *fakeprovider.Provider
	store    ledger.Store
	mw       *riverjobs.Middleware
	worker   *PaymentWorker
	client   *river.Client[pgx.Tx]
	events   <-chan *river.Event
}

type harnessOpts struct {
	faults    fakeprovider.Faults
	transport retrybudget.Config // Base, Ledger and MaxWait are filled in when zero
	mw        riverjobs.Config
	after     func(job *river.Job[PaymentArgs]) error
	failed    func(err error)
	workers   int
}

func newHarness(t *testing.T, o harnessOpts) *harness {
	t.Helper()
	h := &harness{db: pgtest.New(t), provider: fakeprovider.Start(o.faults)}
	t.Cleanup(h.provider.Close)
	if o.transport.Ledger.Store == nil {
		// The ledger on the jobs' own database, in their schema.
		store, err := pgtest.Ledger(h.db.Pool, h.db.Schema)
		if err != nil {
			t.Fatal(err)
		}
		o.transport.Ledger.Store = store
	}
	if o.transport.MaxWait == 0 {
		o.transport.MaxWait = time.Second
	}
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	if o.transport.Base == nil {
		o.transport.Base = base
	}
	h.store = o.transport.Ledger.Store
	if o.mw.TenantField == "" && o.mw.KeyField == "" && o.mw.Action == nil {
		retention := o.mw.Retention
		o.mw = paymentConfig
		o.mw.Retention = retention
	}
	h.mw = riverjobs.New(o.mw)
	h.worker = &PaymentWorker{
		Client: &http.Client{Transport: riverjobs.Record(retrybudget.New(o.transport))},
		URL:    h.provider.URL, After: o.after, Failed: o.failed,
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, h.worker)
	if o.workers == 0 {
		o.workers = 4
	}
	client, err := river.NewClient(riverpgxv5.New(h.db.Pool), &river.Config{
		Schema:            h.db.Schema,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: o.workers}},
		Workers:           workers,
		Middleware:        []rivertype.Middleware{h.mw},
		RetryPolicy:       h.mw.RetryPolicy(nil),
		FetchPollInterval: 50 * time.Millisecond,
		FetchCooldown:     20 * time.Millisecond,
		TestOnly:          true,
		Logger:            discardLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	h.client = client
	events, cancel := client.Subscribe(river.EventKindJobCompleted, river.EventKindJobCancelled,
		river.EventKindJobFailed, river.EventKindJobSnoozed)
	t.Cleanup(cancel)
	h.events = events
	if err := client.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := client.Stop(ctx); err != nil {
			t.Errorf("stop River: %v", err)
		}
	})
	return h
}

// insert inserts one payment job.
func (h *harness) insert(t *testing.T, args PaymentArgs, opts *river.InsertOpts) *rivertype.JobRow {
	t.Helper()
	res, err := h.client.Insert(context.Background(), args, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res.Job
}

// await returns the first event of job id whose kind is one of kinds,
// failing t after timeout.
func (h *harness) await(t *testing.T, id int64, timeout time.Duration, kinds ...river.EventKind) *river.Event {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case ev := <-h.events:
			if ev.Job.ID != id {
				continue
			}
			for _, k := range kinds {
				if ev.Kind == k {
					return ev
				}
			}
		case <-deadline.C:
			t.Fatalf("job %d: no %v event within %v", id, kinds, timeout)
		}
	}
}

// job reads job id as it stands in the database.
func (h *harness) job(t *testing.T, id int64) *rivertype.JobRow {
	t.Helper()
	j, err := h.client.JobGet(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// report reads the Middleware's report of job.
func report(t *testing.T, job *rivertype.JobRow) riverjobs.Report {
	t.Helper()
	r, ok, err := riverjobs.ReportOf(job)
	if err != nil || !ok {
		t.Fatalf("job %d: no report in metadata %s (%v)", job.ID, job.Metadata, err)
	}
	return r
}
