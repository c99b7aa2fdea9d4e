//go:build linux

package riverjobs_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/limiter"
	"github.com/retrybudget/retrybudget/riverjobs"
	"github.com/retrybudget/retrybudget/riverjobs/internal/fakeprovider"
	"github.com/retrybudget/retrybudget/riverjobs/internal/pgtest"
)

// The worker processes of the fleet test are this test binary, re-executed
// with envRole=worker; they read everything else from the environment.
const (
	envDB       = "RIVERJOBS_DB"
	envSchema   = "RIVERJOBS_SCHEMA"
	envRedis    = "RIVERJOBS_REDIS"
	envPrefix   = "RIVERJOBS_PREFIX"
	envProvider = "RIVERJOBS_PROVIDER"
	envID       = "RIVERJOBS_ID"
)

// The fleet's settings, shared by the parent (for its checks) and the
// workers.
const (
	fleetMaxWait     = 2 * time.Second
	fleetRate        = 300 // requests per second on the shared boundary
	fleetWorkers     = 16  // River workers per process
	fleetJobTimeout  = 8 * time.Second
	fleetRescueAfter = 10 * time.Second // River's RescueStuckJobsAfter
	fleetLease       = 2 * time.Second  // the ledger lease
)

// TestFleetWorker is a worker process; it does nothing in a normal run. It
// works payment jobs until its standard input closes, and prints one line
// per new maximum of the Retry-After waits its Transport slept ("sleep
// <ns>") so the
// parent learns them even if this process is killed.
func TestFleetWorker(t *testing.T) {
	if os.Getenv(envRole) != "worker" {
		t.Skip("worker role of TestFleet")
	}
	ctx := context.Background()
	pool, err := pgtest.Open(ctx, os.Getenv(envDB), os.Getenv(envSchema), fleetWorkers+8)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv(envRedis), ContextTimeoutEnabled: true,
		ReadTimeout: time.Second, WriteTimeout: time.Second})
	defer rdb.Close()
	prefix := os.Getenv(envPrefix)
	lim, err := limiter.NewRedis(rdb, limiter.RedisConfig{
		Limits: []limiter.Limit{limiter.PerSecond(fleetRate)}, OwnerShare: 0.5, Prefix: prefix + "lim:",
		BoundaryKey: redistest.BoundaryKey(),
	})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var maxSleep, maxLimitSleep time.Duration
	limitWaits := map[*http.Request]time.Duration{}
	slept := func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if d > maxSleep {
			maxSleep = d
			fmt.Printf("sleep %d\n", d)
		}
	}
	// The Transport sleeps a limiter wait (a cooldown a 429 set, or the
	// rate) only while the call's waits add up to MaxWait at most.
	limited := func(ev retrybudget.LimitEvent) {
		mu.Lock()
		defer mu.Unlock()
		limitWaits[ev.Request] += ev.Wait
		if w := limitWaits[ev.Request]; w <= fleetMaxWait && w > maxLimitSleep {
			maxLimitSleep = w
			fmt.Printf("limitsleep %d\n", w)
		}
	}
	base := &http.Transport{MaxIdleConnsPerHost: fleetWorkers}
	defer base.CloseIdleConnections()
	// The ledger on the jobs' own database, as River's tables are.
	led, err := pgtest.Ledger(pool, os.Getenv(envSchema))
	if err != nil {
		t.Fatal(err)
	}
	mw := riverjobs.New(paymentConfig)
	workers := river.NewWorkers()
	river.AddWorker(workers, &PaymentWorker{URL: os.Getenv(envProvider), Client: &http.Client{
		Transport: riverjobs.Record(retrybudget.New(retrybudget.Config{
			Base:           base,
			Ledger:         retrybudget.LedgerConfig{Store: led, Lease: fleetLease},
			KeysHonoured:   true,
			Limiter:        lim,
			MaxWait:        fleetMaxWait,
			AttemptTimeout: 500 * time.Millisecond,
			// The waits a provider's Retry-After put a goroutine to
			// sleep for; a longer one ends the call and snoozes the job.
			Observer: retrybudget.Observer{Retry: func(ev retrybudget.RetryEvent) {
				if ev.RetryAfter > 0 {
					slept(ev.Delay)
				}
			}, Limited: limited},
		})),
	}})
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		ID:                   os.Getenv(envID),
		Schema:               os.Getenv(envSchema),
		Queues:               map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: fleetWorkers}},
		Workers:              workers,
		Middleware:           []rivertype.Middleware{mw},
		RetryPolicy:          mw.RetryPolicy(nil),
		JobTimeout:           fleetJobTimeout,
		RescueStuckJobsAfter: fleetRescueAfter,
		FetchPollInterval:    50 * time.Millisecond,
		FetchCooldown:        20 * time.Millisecond,
		Logger:               discardLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	fmt.Println("started")
	io.Copy(io.Discard, os.Stdin) // until the parent closes it
	stop, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := client.Stop(stop); err != nil {
		t.Fatal(err)
	}
}

// fleetProc is one worker process seen from the parent.
type fleetProc struct {
	id    string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{} // closed when its output ends
	mu    sync.Mutex    // guards maxSleep
	// maxSleep and maxLimitSleep are the longest Retry-After and limiter
	// waits the process reported sleeping.
	maxSleep, maxLimitSleep time.Duration
}

func startFleetProc(t *testing.T, id string, env []string) *fleetProc {
	t.Helper()
	p := &fleetProc{id: id, done: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], "-test.run=^TestFleetWorker$", "-test.count=1", "-test.v")
	p.cmd.Env = append(os.Environ(), append(env, envRole+"=worker", envID+"="+id)...)
	// The kernel kills the worker if this test dies first.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p.cmd.Stderr = os.Stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "started":
				close(started)
			case strings.HasPrefix(line, "sleep "):
				n, _ := strconv.ParseInt(strings.TrimPrefix(line, "sleep "), 10, 64)
				p.mu.Lock()
				p.maxSleep = max(p.maxSleep, time.Duration(n))
				p.mu.Unlock()
			case strings.HasPrefix(line, "limitsleep "):
				n, _ := strconv.ParseInt(strings.TrimPrefix(line, "limitsleep "), 10, 64)
				p.mu.Lock()
				p.maxLimitSleep = max(p.maxLimitSleep, time.Duration(n))
				p.mu.Unlock()
			case strings.HasPrefix(line, "---"), strings.HasPrefix(line, "==="), line == "PASS", strings.HasPrefix(line, "ok"):
			default:
				t.Logf("%s: %s", id, line)
			}
		}
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		p.cmd.Wait()
	})
	select {
	case <-started:
	case <-p.done:
		t.Fatalf("worker %s exited before starting", id)
	case <-time.After(30 * time.Second):
		t.Fatalf("worker %s did not start within 30s", id)
	}
	return p
}

// TestFleet pins the fleet guarantee: payment jobs worked by two worker
// processes against a provider that answers 429 bursts with Retry-After,
// 503s and lost responses, with the River leader SIGKILLed mid-run. Every
// job must end completed or cancelled with a reason, with no duplicate
// effect, no job lost, and no worker goroutine asleep on a wait longer than
// MaxWait. RETRYBUDGET_LONG=1 runs 10,000 jobs instead of 1,000.
func TestFleet(t *testing.T) {
	jobs, patience := 1000, 100*time.Second
	if os.Getenv("RETRYBUDGET_LONG") == "1" {
		jobs, patience = 10000, 15*time.Minute
	}
	db := pgtest.New(t)
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t)
	provider := fakeprovider.Start(fakeprovider.Faults{
		Burst429: 0.006, BurstLength: 4 * time.Second, Unavailable: 0.04, Lost: 0.04, Seed: 7,
	})
	t.Cleanup(provider.Close)
	ctx := context.Background()

	// The application side inserts the jobs: three tenants, one of them
	// with most of the load; one in fifty asks for a charge the provider
	// rejects.
	inserter, err := river.NewClient(riverpgxv5.New(db.Pool), &river.Config{Schema: db.Schema, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	params := make([]river.InsertManyParams, jobs)
	rejected := map[string]bool{}
	for i := range params {
		tenant := [...]string{"big", "big", "big", "big", "big", "big", "big", "mid", "mid", "small"}[i%10]
		a := PaymentArgs{Tenant: tenant, Order: fmt.Sprintf("order-%05d", i), Amount: 100 + i}
		if i%50 == 7 {
			a.Amount = -1
			rejected[a.Order] = true
		}
		params[i] = river.InsertManyParams{Args: a}
	}
	if _, err := inserter.InsertMany(ctx, params); err != nil {
		t.Fatal(err)
	}

	env := []string{envDB + "=" + db.URL, envSchema + "=" + db.Schema, envRedis + "=" + rdb.Options().Addr,
		envPrefix + "=" + prefix, envProvider + "=" + provider.URL}
	start := time.Now()
	procs := map[string]*fleetProc{}
	for _, id := range []string{"worker-0", "worker-1"} {
		procs[id] = startFleetProc(t, id, env)
	}

	// Mid-run, SIGKILL the River leader: its running jobs stay "running"
	// until the survivor is elected and its rescuer hands them back.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var victim string
	var interrupted []int64
	for victim == "" {
		<-tick.C
		if time.Since(start) > patience {
			t.Fatal("no leader with running jobs before the patience ran out")
		}
		var done int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state IN ('completed','cancelled')`).Scan(&done); err != nil {
			t.Fatal(err)
		}
		var leader string
		err := db.Pool.QueryRow(ctx, `SELECT leader_id FROM river_leader`).Scan(&leader)
		if done < jobs*3/10 || err != nil {
			continue
		}
		rows, err := db.Pool.Query(ctx, `SELECT id FROM river_job WHERE state = 'running' AND attempted_by[array_length(attempted_by, 1)] = $1`, leader)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := collectIDs(rows)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) == 0 {
			continue
		}
		procs[leader].cmd.Process.Signal(syscall.SIGKILL)
		victim, interrupted = leader, ids
		t.Logf("SIGKILLed leader %s after %d jobs finished, with %d jobs running on it", leader, done, len(ids))
	}
	<-procs[victim].done

	// Wait for every job to reach a final state.
	for {
		<-tick.C
		var final int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE finalized_at IS NOT NULL`).Scan(&final); err != nil {
			t.Fatal(err)
		}
		if final == jobs {
			break
		}
		if time.Since(start) > patience {
			t.Fatalf("%d of %d jobs final after %v", final, jobs, patience)
		}
	}
	elapsed := time.Since(start)
	for id, p := range procs {
		if id != victim {
			p.stdin.Close()
			<-p.done
			if err := p.cmd.Wait(); err != nil {
				t.Errorf("survivor %s: %v", id, err)
			}
		}
	}

	// Every job: completed (charged exactly once) or cancelled with a
	// reason (rejected: never charged); none lost, none discarded.
	all, err := inserter.JobList(ctx, river.NewJobListParams().First(jobs+1).States(
		rivertype.JobStateAvailable, rivertype.JobStateCancelled, rivertype.JobStateCompleted, rivertype.JobStateDiscarded,
		rivertype.JobStatePending, rivertype.JobStateRetryable, rivertype.JobStateRunning, rivertype.JobStateScheduled))
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Jobs) != jobs {
		t.Fatalf("%d jobs in the queue; want %d (0 lost)", len(all.Jobs), jobs)
	}
	stats := provider.Stats()
	var completed, cancelled, snoozedJobs, held int
	riverAttempts, sends, snoozes := map[int]int{}, map[int]int{}, map[int]int{}
	interruptedSet := map[int64]bool{}
	for _, id := range interrupted {
		interruptedSet[id] = true
	}
	var interruptedReplayed int
	for _, j := range all.Jobs {
		var args PaymentArgs
		json.Unmarshal(j.EncodedArgs, &args)
		r := report(t, j)
		riverAttempts[j.Attempt]++
		sends[r.TotalAttempts]++
		var md struct{ Snoozes int }
		json.Unmarshal(j.Metadata, &md)
		snoozes[md.Snoozes]++
		if md.Snoozes > 0 {
			snoozedJobs++
		}
		switch j.State {
		case rivertype.JobStateCompleted:
			completed++
			if rejected[args.Order] || stats.PerOrder[args.Order] != 1 {
				t.Errorf("job %d (%s) completed with %d effects; want 1: %s, errors %+v", j.ID, args.Order, stats.PerOrder[args.Order], j.Metadata, j.Errors)
			}
			if interruptedSet[j.ID] && r.Replayed {
				interruptedReplayed++
			}
		case rivertype.JobStateCancelled:
			cancelled++
			if r.Reason == "" || len(j.Errors) == 0 {
				t.Errorf("job %d cancelled without a reason: %+v", j.ID, r)
			}
			if r.Verb == "held" {
				held++
			} else if !rejected[args.Order] {
				t.Errorf("job %d (%s) cancelled but was not a rejected charge: %+v", j.ID, args.Order, r)
			}
			if stats.PerOrder[args.Order] != 0 {
				t.Errorf("cancelled job %d (%s) has %d effects", j.ID, args.Order, stats.PerOrder[args.Order])
			}
		default:
			t.Errorf("job %d ended %s: %+v", j.ID, j.State, r)
		}
	}
	for _, id := range interrupted {
		for _, j := range all.Jobs {
			if j.ID == id && j.State != rivertype.JobStateCompleted && j.State != rivertype.JobStateCancelled {
				t.Errorf("interrupted job %d ended %s", id, j.State)
			}
		}
	}
	if stats.Duplicates != 0 {
		t.Errorf("duplicate effects = %d; want 0", stats.Duplicates)
	}
	if stats.Effects != completed {
		t.Errorf("effects %d != completed jobs %d", stats.Effects, completed)
	}
	var maxSleep, maxLimitSleep time.Duration
	for _, p := range procs {
		p.mu.Lock()
		maxSleep, maxLimitSleep = max(maxSleep, p.maxSleep), max(maxLimitSleep, p.maxLimitSleep)
		p.mu.Unlock()
	}
	// A Retry-After within MaxWait is slept plus a spread of up to
	// Jitter×BaseDelay (100ms by default); anything longer is snoozed.
	if limit := fleetMaxWait + retrybudget.DefaultBaseDelay/2; maxSleep > limit {
		t.Errorf("a worker goroutine slept %v; want at most MaxWait plus spread (%v): longer waits are snoozed", maxSleep, limit)
	}
	if maxLimitSleep > fleetMaxWait {
		t.Errorf("a worker goroutine slept %v on the limiter; want at most MaxWait (%v)", maxLimitSleep, fleetMaxWait)
	}
	if stats.Faults["429"] == 0 || stats.Faults["503"] == 0 || stats.Faults["lost"] == 0 {
		t.Errorf("faults injected %v; want 429 bursts, 503s and lost responses", stats.Faults)
	}
	if snoozedJobs == 0 {
		t.Error("no job was snoozed")
	}
	t.Logf("%d jobs in %v: %d completed, %d cancelled with a reason (%d held), 0 lost; provider: %d arrivals, %d effects, %d duplicates, %d replays by key, faults %v",
		jobs, elapsed.Round(time.Millisecond), completed, cancelled, held, stats.Arrivals, stats.Effects, stats.Duplicates, stats.Replays, stats.Faults)
	t.Logf("killed %s with %d jobs running on it: all finished, %d of them completed as ledger replays", victim, len(interrupted), interruptedReplayed)
	t.Logf("longest Retry-After slept by a worker goroutine: %v; longest limiter wait slept: %v (MaxWait %v; longer ones were snoozed)",
		maxSleep, maxLimitSleep, fleetMaxWait)
	t.Logf("jobs by River attempts: %s", histogram(riverAttempts))
	t.Logf("jobs by provider sends (all runs): %s", histogram(sends))
	t.Logf("jobs by snoozes: %s (%d jobs snoozed at least once)", histogram(snoozes), snoozedJobs)
}

func collectIDs(rows interface {
	Next() bool
	Scan(...any) error
	Err() error
	Close()
}) ([]int64, error) {
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// histogram renders counts by value as "value:count" pairs, in order.
func histogram(m map[int]int) string {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%d:%d", k, m[k])
	}
	return b.String()
}
