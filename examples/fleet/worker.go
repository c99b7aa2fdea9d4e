package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/limiter"
)

// workerEnv holds a worker's workerConfig as JSON; a process started with
// it set is a worker. Everything else a worker needs (Redis, the two
// secrets, the API key) comes from the environment the quickstart names.
const workerEnv = "FLEET_WORKER"

// workerConfig tells a worker process what to run.
type workerConfig struct {
	Index    int            // the worker's number, for its log lines
	Provider string         // the provider's base URL
	Rate     int            // the provider's limit, per second
	Run      string         // names this run's orders and job queues
	Loops    map[string]int // tenant → concurrent job loops in this process
	// FirstCome runs the limiter without the fair queue.
	FirstCome bool
}

// rerunEvery is how often an order is delivered a second time: every
// rerunEvery-th order of a tenant, once it is done.
const rerunEvery = 4

// tally is what one worker process did for one tenant.
type tally struct {
	Loops int
	// Charged counts jobs that ended StepDone with a charge sent now.
	Charged int
	// Replayed counts jobs that ended StepDone with the ledger's stored
	// answer (Outcome.Replayed): nothing was sent.
	Replayed int
	// Reruns counts jobs that were a second delivery of an order, and
	// RerunsSent those of them that were sent rather than replayed.
	Reruns, RerunsSent int
	// Retries counts StepRetry results run again within the run, by
	// reason code.
	Retries map[string]int
	// Stopped and Held count StepStop and StepHold results.
	Stopped, Held int
	// Unfinished counts jobs in hand when the run ended, and Interrupted
	// those of them whose request may have reached the provider
	// (Outcome.MaybeApplied): the run ended their call after sending.
	// Their next delivery is answered from the ledger, never sent twice.
	Unfinished, Interrupted int
}

// report is the last line a worker prints on stdout, after reportPrefix.
type report map[string]*tally

// The lines of the protocol between the parent and a worker: the worker
// prints readyLine once its Transport is built and Redis answers, the
// parent answers with goPrefix and the end of the run in Unix nanoseconds,
// and the worker prints reportPrefix and its report when its loops are
// done.
const (
	readyLine    = "ready"
	goPrefix     = "go "
	reportPrefix = "report "
)

// workerMain runs a worker process and returns its exit status.
func workerMain() int {
	var cfg workerConfig
	if err := json.Unmarshal([]byte(os.Getenv(workerEnv)), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "fleet worker: %s: %v\n", workerEnv, err)
		return 2
	}
	logger := log.New(os.Stderr, fmt.Sprintf("worker %d: ", cfg.Index), 0)
	rep, err := work(cfg, os.Stdin, os.Stdout, logger)
	if err != nil {
		logger.Print(err)
		return 1
	}
	out, _ := json.Marshal(rep)
	fmt.Printf("%s%s\n", reportPrefix, out)
	return 0
}

// work builds the quickstart's Transport, says it is ready, waits for the
// parent's go and runs the job loops until the end of the run.
func work(cfg workerConfig, in io.Reader, out io.Writer, logger *log.Logger) (report, error) {
	// The quickstart's set-up, from the environment. Only the limit is
	// this provider's (the quickstart's is 100/s).
	opt, err := redisOptions(os.Getenv("REDIS_ADDR"))
	if err != nil {
		return nil, err
	}
	opt.ContextTimeoutEnabled = true
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	secret, err := base64.StdEncoding.DecodeString(os.Getenv("RETRYBUDGET_SECRET"))
	if err != nil {
		return nil, fmt.Errorf("RETRYBUDGET_SECRET: %w", err)
	}
	// One record per action across the fleet (a charge is sent once), the
	// provider's limit shared with tenants taking turns when it is
	// saturated, and the retry budget: every key derived from the secret.
	fleet, err := retrybudget.NewFleet(retrybudget.FleetConfig{
		Redis:     rdb,
		Secrets:   [][]byte{secret},
		Owner:     os.Getenv("POD_NAME"),
		Limits:    []limiter.Limit{limiter.PerSecond(cfg.Rate)},
		FirstCome: cfg.FirstCome, // -fair=false, for comparison
		Transport: retrybudget.Config{KeysHonoured: true, MaxWait: 10 * time.Second},
	})
	if err != nil {
		return nil, err
	}
	client := &http.Client{Transport: fleet.Transport}
	defer client.CloseIdleConnections()

	ctx := context.Background()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return nil, fmt.Errorf("ping Redis: %w", err)
	}
	// The limiter's scripts loaded before the first job: its first
	// decision then takes one round trip.
	if err := fleet.Prepare(ctx); err != nil {
		return nil, err
	}
	fmt.Fprintln(out, readyLine)
	until, err := waitForGo(in)
	if err != nil {
		return nil, err
	}

	// Every call of the run ends at its end: a call waiting in the fair
	// queue then returns at once with a RetryAt instead of sending late.
	ctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	w := &worker{
		client: client,
		url:    cfg.Provider + "/v1/charges",
		jobs:   jobQueue{rdb: rdb, run: cfg.Run},
		log:    logger,
		rep:    report{},
	}
	var wg sync.WaitGroup
	for tenant, n := range cfg.Loops {
		w.rep[tenant] = &tally{Loops: n, Retries: map[string]int{}}
		for range n {
			wg.Go(func() { w.loop(ctx, tenant) })
		}
	}
	wg.Wait()
	return w.rep, w.err
}

// waitForGo reads the parent's go line and returns the end of the run.
func waitForGo(in io.Reader) (time.Time, error) {
	line, err := bufio.NewReader(in).ReadString('\n')
	if !strings.HasPrefix(line, goPrefix) {
		return time.Time{}, fmt.Errorf("no go line from the parent: %q, %v", line, err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(line, goPrefix)), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("go line %q: %w", line, err)
	}
	return time.Unix(0, ns), nil
}

// worker runs one process's job loops.
type worker struct {
	client *http.Client
	url    string
	jobs   jobQueue
	log    *log.Logger

	mu  sync.Mutex // guards rep and err
	rep report
	err error // the first job-queue failure
}

// takeAttempts and takePause bound how a job loop rides out a job queue
// that fails: that many reads in a row, that long apart.
const (
	takeAttempts = 5
	takePause    = 200 * time.Millisecond
)

// loop takes the tenant's jobs one after another until the run ends.
func (w *worker) loop(ctx context.Context, tenant string) {
	failures := 0
	for ctx.Err() == nil {
		j, err := w.jobs.take(ctx, tenant)
		if err != nil {
			// A queue read that timed out (a busy machine, a Redis
			// failover) is taken again after a pause, as a worker of a
			// real queue does; only a queue that keeps failing ends the run.
			if failures++; failures < takeAttempts && ctx.Err() == nil {
				w.log.Printf("take a %s job: %v (taking again)", tenant, err)
				select {
				case <-ctx.Done():
				case <-time.After(takePause):
				}
				continue
			}
			if ctx.Err() == nil {
				w.fail(fmt.Errorf("take a %s job: %w", tenant, err))
			}
			return
		}
		failures = 0
		w.do(ctx, tenant, j)
	}
}

// do charges one order until Next says it is done, stopped or held, or
// the run ends. This is the quickstart's switch, with a job queue around
// it: StepRetry runs the same Action again at RetryAt.
func (w *worker) do(ctx context.Context, tenant string, j job) {
	for {
		resp, err := charge(ctx, w.client, w.url, tenant, j.order)
		step, out := retrybudget.Next(resp, err)
		if resp != nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		switch step {
		case retrybudget.StepDone: // sent now, or its recorded answer replayed
			w.count(tenant, func(t *tally) {
				if out.Replayed {
					t.Replayed++
				} else {
					t.Charged++
				}
				if j.rerun {
					t.Reruns++
					if !out.Replayed {
						t.RerunsSent++
					}
				}
			})
			if !j.rerun && j.n%rerunEvery == 0 {
				// A job queue delivers the job again, to any worker of
				// the fleet.
				if err := w.jobs.redeliver(ctx, tenant, j.order); err != nil && ctx.Err() == nil {
					w.fail(fmt.Errorf("redeliver %s: %w", j.order, err))
				}
			}
			return
		case retrybudget.StepRetry: // rate limited, pending elsewhere, past the deadline...
			// Wait for RetryAt with the job in hand; a queue would
			// deliver it again then. A turn after the end of the run is
			// left to the next run.
			if !sleepUntil(ctx, out.RetryAt) {
				w.count(tenant, func(t *tally) {
					t.Unfinished++
					if out.MaybeApplied {
						t.Interrupted++
					}
				})
				return
			}
			w.count(tenant, func(t *tally) { t.Retries[retrybudget.ReasonCode(out.Reason)]++ })
		case retrybudget.StepStop: // rejected, or the key reused for another request
			w.count(tenant, func(t *tally) { t.Stopped++ })
			w.log.Printf("%s: final answer %d: %v", j.order, out.StatusCode, out.Reason)
			return
		case retrybudget.StepHold: // may have been applied: a Reconciler or an operator settles it
			w.count(tenant, func(t *tally) { t.Held++ })
			w.log.Printf("%s: held for reconciliation: %v", j.order, out.Reason)
			return
		}
	}
}

// charge sends one order's charge under its Action, as the quickstart's
// charge does, with the tenant and order in the charge's metadata.
func charge(ctx context.Context, client *http.Client, endpoint, tenant, order string) (*http.Response, error) {
	ctx = retrybudget.WithAction(ctx, retrybudget.Action{Tenant: tenant, Operation: "charge", Key: order})
	body := url.Values{
		"amount":           {"2000"},
		"currency":         {"eur"},
		"metadata[tenant]": {tenant},
		"metadata[order]":  {order},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(body.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+os.Getenv("PROVIDER_API_KEY"))
	return client.Do(req)
}

// retryBackoff is the wait before running a job again when Next gives no
// RetryAt: the queue's own backoff.
const retryBackoff = 100 * time.Millisecond

// sleepUntil waits until at (retryBackoff from now when at is zero) and
// reports whether the run is still on.
func sleepUntil(ctx context.Context, at time.Time) bool {
	if ctx.Err() != nil {
		return false
	}
	d := retryBackoff
	if !at.IsZero() {
		d = time.Until(at)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// count applies f to the tenant's tally under the lock.
func (w *worker) count(tenant string, f func(*tally)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f(w.rep[tenant])
}

// fail records the first job-queue failure; the worker exits 1 with it.
func (w *worker) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

// job is one delivery of an order.
type job struct {
	order string
	n     int64 // the order's number within its tenant
	rerun bool  // a second delivery of an order already done
}

// jobQueue hands out each tenant's orders, fleet-wide, from Redis: a
// counter numbers new orders and a list holds the orders delivered again.
type jobQueue struct {
	rdb *redis.Client
	run string
}

// take returns the tenant's next job: an order delivered again when one
// waits, else a new order.
func (q jobQueue) take(ctx context.Context, tenant string) (job, error) {
	order, err := q.rdb.LPop(ctx, q.key(tenant, "reruns")).Result()
	if err == nil {
		return job{order: order, rerun: true}, nil
	}
	if !errors.Is(err, redis.Nil) {
		return job{}, err
	}
	var n *redis.IntCmd
	_, err = q.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		n = p.Incr(ctx, q.key(tenant, "next"))
		p.Expire(ctx, q.key(tenant, "next"), jobKeyTTL)
		return nil
	})
	if err != nil {
		return job{}, err
	}
	return job{order: fmt.Sprintf("order-%s-%05d", q.run, n.Val()), n: n.Val()}, nil
}

// redeliver queues order to be taken again by any worker of the tenant.
func (q jobQueue) redeliver(ctx context.Context, tenant, order string) error {
	_, err := q.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.RPush(ctx, q.key(tenant, "reruns"), order)
		p.Expire(ctx, q.key(tenant, "reruns"), jobKeyTTL)
		return nil
	})
	return err
}

// jobKeyTTL is how long the job-queue keys outlive their last use, so that
// a shared Redis is not left with them.
const jobKeyTTL = time.Hour

// key names one of the run's job-queue keys.
func (q jobQueue) key(tenant, what string) string {
	return "fleet-example:" + q.run + ":" + tenant + ":" + what
}
