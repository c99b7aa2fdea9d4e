package budget_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/budget"
	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/internal/testenv"
)

// The fleet test runs the budget the way it is deployed: several OS
// processes calling the same providers. The parent test process plays the
// providers (httptest servers on loopback) and re-executes this test binary
// as the workers, which run TestFleetChild, selected by fleetRoleEnv.

const (
	fleetRoleEnv   = "BUDGET_FLEET_ROLE"   // "child" in a worker process
	fleetConfigEnv = "BUDGET_FLEET_CONFIG" // a JSON fleetConfig
	fleetReady     = "FLEET-READY"         // the worker's line once set up
	fleetResult    = "FLEET-RESULT "       // prefixes the worker's report line

	fleetWorkers = 4
	// fleetFailEvery: the healthy provider fails the first attempt of
	// one request in this many (5%), and answers its retry.
	fleetFailEvery = 20
	// fleetMaxAmplification is the bound the shared budget must keep:
	// the 10% of the rule plus a little floor for the whole fleet.
	fleetMaxAmplification = 1.15
)

// fleetConfig tells a worker what to do. The Redis is named by REDIS_ADDR,
// which redistest.Client reads.
type fleetConfig struct {
	Mode        string // "redis" or "local"
	Calls       int    // logical requests per provider
	Concurrency int    // per provider
	Worker      int    // the worker's number, for request ids
	Dead        string // the provider answering 503 to everything
	Healthy     string // the provider failing 5% of first attempts
	Prefix      string // Redis key prefix shared by the fleet
}

// fleetReport is what a worker prints when done.
type fleetReport struct {
	Dead, DeadRefused, DeadErrors    int // calls to the dead provider
	Healthy, HealthyOK, HealthyRetry int // calls to the healthy one
	Decisions, Fallback              int // budget decisions seen
	Millis                           int64
}

// fleetOutcome is one fleet run as the providers saw it.
type fleetOutcome struct {
	reports          []fleetReport
	deadArrivals     int64
	healthyArrivals  int64
	healthyFailed    int64 // first attempts the healthy provider failed
	logical, healthy int
	retries, refused int
	fallback         int
	healthyOK        int
	elapsed          time.Duration
}

func (o fleetOutcome) amplification() float64 {
	return float64(o.deadArrivals) / float64(o.logical)
}

// TestFleet: four worker processes sharing the Redis budget against a dead
// provider send no more retries than the rule allows the fleet (10% of its
// first attempts plus one floor of 10 retries a second over the run), while
// a healthy provider in the same run gets the retries it needs. The same
// workers with a budget.Local each are the control. The figure, at most
// 1.15 attempts per logical request for busy workers, is asserted with
// RETRYBUDGET_FIGURES=1: a loaded machine stretches the run, and the floor
// grows with it.
//
// Two traffic levels show where sharing matters. Busy workers (200 calls
// each) are bounded by the 10% share, which adds up the same whether
// counted per process or for the fleet. Quiet workers (25 calls each) are
// bounded by the floor of 10 retries per second: shared, that is 10 for
// the fleet; local, 10 for each process.
func TestFleet(t *testing.T) {
	if os.Getenv(fleetRoleEnv) != "" {
		t.Skip("a worker runs TestFleetChild only")
	}
	env := os.Environ()
	if os.Getenv("REDIS_ADDR") == "" {
		// The workers need an address to share; a private server has one.
		env = append(env, "REDIS_ADDR="+redistest.Start(t).Addr)
	}
	for _, sc := range []struct {
		name               string
		calls, concurrency int
		// bounded requires amplification <= fleetMaxAmplification with
		// RETRYBUDGET_FIGURES=1; the quiet fleet, where the floor
		// dominates, is held to the rule only.
		bounded bool
	}{
		{"busy", 200, 10, true},
		{"quiet", 25, 5, false},
	} {
		t.Run(sc.name, func(t *testing.T) {
			shared := runFleet(t, env, fleetConfig{Mode: "redis", Calls: sc.calls, Concurrency: sc.concurrency})
			local := runFleet(t, env, fleetConfig{Mode: "local", Calls: sc.calls, Concurrency: sc.concurrency})
			checkFleet(t, sc.bounded, shared, local)
		})
	}
}

// checkFleet logs the shared and local runs side by side and checks them.
func checkFleet(t *testing.T, bounded bool, shared, local fleetOutcome) {
	t.Helper()
	t.Logf("fleet of %d processes, %d logical requests each to a dead provider (503), MaxAttempts 4:", fleetWorkers, shared.logical/fleetWorkers)
	for _, r := range []struct {
		name string
		o    fleetOutcome
	}{{"Redis budget ", shared}, {"local budgets", local}} {
		t.Logf("  %s amplification %.3f: %d attempts for %d logical (%d retries, %d calls refused by the budget), %d fallback decisions, %v; healthy provider: %d/%d calls succeeded, %d of %d failed first attempts retried",
			r.name, r.o.amplification(), r.o.deadArrivals, r.o.logical, r.o.retries, r.o.refused, r.o.fallback,
			r.o.elapsed.Round(time.Millisecond), r.o.healthyOK, r.o.healthy, r.o.healthyArrivals-int64(r.o.healthy), r.o.healthyFailed)
	}
	if a := shared.amplification(); bounded && testenv.Figures() && a > fleetMaxAmplification {
		t.Errorf("fleet-wide amplification with the Redis budget %.3f; want at most %.2f (%s=1)", a, fleetMaxAmplification, testenv.FiguresEnv)
	}
	// Whatever the traffic, the fleet keeps the rule: 10% of its first
	// attempts, plus the one floor's full bucket and its refill over the
	// run.
	if limit := 0.1*float64(shared.logical) + 10 + 10*shared.elapsed.Seconds(); float64(shared.retries) > limit {
		t.Errorf("the fleet sent %d retries with the Redis budget; the rule allows at most %.1f", shared.retries, limit)
	}
	if shared.fallback != 0 {
		t.Errorf("%d fallback decisions: the fleet did not share one budget throughout", shared.fallback)
	}
	for _, o := range []fleetOutcome{shared, local} {
		if o.healthyOK != o.healthy {
			t.Errorf("healthy provider: %d of %d calls succeeded; want all, its retries allowed", o.healthyOK, o.healthy)
		}
		// Every request the healthy provider failed came back once.
		if want := int64(o.healthy) + o.healthyFailed; o.healthyArrivals != want {
			t.Errorf("healthy provider saw %d attempts; want %d (one retry per failed first attempt)", o.healthyArrivals, want)
		}
	}
}

// runFleet starts the providers and the workers in mode, releases the
// workers together once all are set up, and collects their reports.
func runFleet(t *testing.T, env []string, fc fleetConfig) fleetOutcome {
	t.Helper()
	var dead, healthy, healthyFailed atomic.Int64
	deadSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dead.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer deadSrv.Close()
	var mu sync.Mutex // guards seen
	seen := map[string]bool{}
	healthySrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		healthy.Add(1)
		id := r.URL.Query().Get("id")
		n, _ := strconv.Atoi(id[strings.IndexByte(id, '-')+1:])
		mu.Lock()
		first := !seen[id]
		seen[id] = true
		mu.Unlock()
		if first && n%fleetFailEvery == fleetFailEvery/2 {
			healthyFailed.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer healthySrv.Close()

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	prefix := redistest.Prefix(t)
	type worker struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		lines  chan string
		stderr strings.Builder
	}
	workers := make([]*worker, fleetWorkers)
	for i := range workers {
		fc.Worker, fc.Dead, fc.Healthy, fc.Prefix = i, deadSrv.URL, healthySrv.URL, prefix
		cfg, _ := json.Marshal(fc)
		w := &worker{lines: make(chan string, 16)}
		w.cmd = exec.CommandContext(ctx, os.Args[0], "-test.run=^TestFleetChild$", "-test.count=1", "-test.v")
		w.cmd.Env = append(env, fleetRoleEnv+"=child", fleetConfigEnv+"="+string(cfg))
		w.cmd.Stderr = &w.stderr
		var err error
		if w.stdin, err = w.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		stdout, err := w.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := w.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			defer close(w.lines)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				w.lines <- sc.Text()
			}
		}()
		workers[i] = w
	}
	defer func() {
		for _, w := range workers {
			_ = w.cmd.Process.Kill() // no-op for a worker that finished
			_ = w.cmd.Wait()
		}
	}()

	// await returns the first line of w's output starting with prefix,
	// and every line read on the way for a failure message.
	await := func(w *worker, prefix string) (string, []string) {
		var out []string
		for line := range w.lines {
			out = append(out, line)
			if strings.HasPrefix(line, prefix) {
				return line, out
			}
		}
		return "", out
	}
	for i, w := range workers {
		if line, out := await(w, fleetReady); line == "" {
			t.Fatalf("worker %d never got ready:\n%s\n%s", i, strings.Join(out, "\n"), w.stderr.String())
		}
	}
	start := time.Now()
	for _, w := range workers {
		io.WriteString(w.stdin, "go\n")
	}
	o := fleetOutcome{}
	for i, w := range workers {
		line, out := await(w, fleetResult)
		if line == "" {
			t.Fatalf("worker %d gave no report:\n%s\n%s", i, strings.Join(out, "\n"), w.stderr.String())
		}
		var r fleetReport
		if err := json.Unmarshal([]byte(strings.TrimPrefix(line, fleetResult)), &r); err != nil {
			t.Fatal(err)
		}
		if r.DeadErrors != 0 {
			t.Errorf("worker %d: %d calls to the dead provider failed without a response", i, r.DeadErrors)
		}
		o.reports = append(o.reports, r)
		o.logical += r.Dead
		o.refused += r.DeadRefused
		o.healthy += r.Healthy
		o.healthyOK += r.HealthyOK
		o.fallback += r.Fallback
	}
	// The last report ends the traffic; the workers' exit does not count.
	o.elapsed = time.Since(start)
	for i, w := range workers {
		for range w.lines { // drain to the end, so Wait sees a clean exit
		}
		if err := w.cmd.Wait(); err != nil {
			t.Fatalf("worker %d: %v\n%s", i, err, w.stderr.String())
		}
	}
	o.deadArrivals, o.healthyArrivals, o.healthyFailed = dead.Load(), healthy.Load(), healthyFailed.Load()
	o.retries = int(o.deadArrivals) - o.logical
	return o
}

// TestFleetChild is one worker of TestFleet. It is skipped unless
// TestFleet started this process.
func TestFleetChild(t *testing.T) {
	if os.Getenv(fleetRoleEnv) != "child" {
		t.Skip("runs only as a worker process of TestFleet")
	}
	var cfg fleetConfig
	if err := json.Unmarshal([]byte(os.Getenv(fleetConfigEnv)), &cfg); err != nil {
		t.Fatal(err)
	}
	var b budget.Budget
	switch cfg.Mode {
	case "redis":
		// The timeout is generous: this test is about sharing, and four
		// processes under the race detector on two cores with another
		// process busy have taken over 2s for a round trip.
		rb, err := budget.NewRedis(redistest.Client(t), budget.RedisConfig{Prefix: cfg.Prefix, Timeout: 10 * time.Second, DestinationKey: []byte("budget-fleet-destination-key-1")})
		if err != nil {
			t.Fatal(err)
		}
		b = rb
	case "local":
		b = budget.NewLocal(budget.Config{})
	default:
		t.Fatalf("unknown mode %q", cfg.Mode)
	}

	var rep fleetReport
	var mu sync.Mutex // guards rep
	base := &http.Transport{MaxIdleConnsPerHost: 2 * cfg.Concurrency}
	defer base.CloseIdleConnections()
	tr := retrybudget.New(retrybudget.Config{
		Base:        base,
		MaxAttempts: 4,
		BaseDelay:   10 * time.Millisecond,
		Budget:      b,
		Observer: retrybudget.Observer{
			Budget: func(e retrybudget.BudgetEvent) {
				mu.Lock()
				defer mu.Unlock()
				rep.Decisions++
				if e.Decision.Fallback {
					rep.Fallback++
				}
			},
			GiveUp: func(e retrybudget.GiveUpEvent) {
				if errors.Is(e.Outcome.Reason, retrybudget.ErrBudgetExhausted) && e.Request.URL.Host == strings.TrimPrefix(cfg.Dead, "http://") {
					mu.Lock()
					defer mu.Unlock()
					rep.DeadRefused++
				}
			},
		},
	})

	fmt.Println(fleetReady)
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		t.Fatalf("waiting for the start signal: %v", err)
	}
	start := time.Now()
	var wg sync.WaitGroup
	pool := func(n int, call func(i int)) {
		next := atomic.Int64{}
		for range cfg.Concurrency {
			wg.Go(func() {
				for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
					call(i)
				}
			})
		}
	}
	get := func(url string) (int, error) {
		req, err := http.NewRequest("GET", url, nil)
		if err != nil {
			return 0, err
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	pool(cfg.Calls, func(int) {
		_, err := get(cfg.Dead)
		mu.Lock()
		defer mu.Unlock()
		rep.Dead++
		if err != nil {
			rep.DeadErrors++
		}
	})
	pool(cfg.Calls, func(i int) {
		code, err := get(fmt.Sprintf("%s/?id=%d-%d", cfg.Healthy, cfg.Worker, i))
		mu.Lock()
		defer mu.Unlock()
		rep.Healthy++
		if err == nil && code == http.StatusOK {
			rep.HealthyOK++
		}
	})
	wg.Wait()
	rep.Millis = time.Since(start).Milliseconds()
	out, _ := json.Marshal(rep)
	fmt.Println(fleetResult + string(out))
}
