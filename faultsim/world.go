package faultsim

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/limiter"
)

// The simulator's flags, registered in every test binary that imports the
// package (only tests do) and only read after flag.Parse.
var (
	seedFlag      = flag.Int64("sim.seed", 0, "TestSimulation: run only the schedule of this seed")
	schedulesFlag = flag.Int("sim.schedules", 0, "TestSimulation: schedules per store (zero: the CI budget, or the long one with RETRYBUDGET_LONG=1)")
	traceFlag     = flag.Bool("sim.trace", false, "TestSimulation: log each schedule's trace, not only a failing one's")
	fromFlag      = flag.Int64("sim.from", 0, "TestSimulation: the first seed of the window (zero: RETRYBUDGET_SIM_FROM, else one drawn from the clock, so each run explores new seeds)")
)

// maxWindowStart bounds a window's first seed drawn from the clock.
const maxWindowStart = 100_000_000

// World is a store to simulate against, and the scale of its time.
type World struct {
	// Name names the world's subtest.
	Name string
	// Lease is the ledger lease; every duration of a schedule is a
	// fraction or multiple of it.
	Lease time.Duration
	// Slack is how long past its deadline a RoundTrip may return: two
	// store calls' grace (storeGrace, 50 ms, for recording a send and
	// settling) in virtual time, more with real sockets.
	Slack time.Duration
	// Virtual runs each schedule in a testing/synctest bubble.
	Virtual bool
	// Replicas: the store can draw WaitReplicas and replica lag.
	Replicas bool
	// Inbound: the world draws inbound middleware schedules too.
	Inbound bool
	// CI and Long are the schedules per run in CI and in long mode
	// (RETRYBUDGET_LONG=1).
	CI, Long int
	// Parallel > 1 runs schedules as parallel subtests.
	Parallel int
	// Setup, when set, starts what the world's schedules share, for the
	// world's test.
	Setup func(t *testing.T)
	// Limiter, when set, is the shared limiter of a schedule with a rate
	// limit, whose outage is its own (the simulated limiter injects none);
	// nil means a limiter.Local whose outage the simulator injects.
	Limiter func(t *testing.T, r *Run) limiter.Limiter
	// Open starts the store for one schedule, closed with t's cleanup, and
	// returns it and a function that starts replica lag (nil when the
	// world has no replicas).
	Open func(t *testing.T, r *Run) (ledger.Store, func(r *Run, failover bool))
	// Cut, when set, runs one store call op on a connection of its own
	// that the world cuts as c says (see Cut), and returns op's error: the
	// store's real error for a broken connection. A world with Cut draws
	// commit cuts, and its lost replies are real ones (CutAfter) instead
	// of the simulated errLostReply.
	Cut func(ctx context.Context, r *Run, c Cut, op func(context.Context, ledger.Store) error) error
	// Stall, when set, stalls the world's store for a lease and a half
	// from now, for real: a statement sent meanwhile waits in the store
	// and runs when the stall ends, whether its caller still waits or not.
	// Nil means the simulator runs the stalled call itself a lease and a
	// half late.
	Stall func(r *Run)
	// Tx, when set, gives the inbound workload's Atomic schedules the
	// world's own transactions (ledger.Atomic) instead of transactions in
	// memory.
	Tx func(t *testing.T, r *Run) *TxWorld
	// Batches, when set, says that the world's store shares round trips
	// between the calls of concurrent actions, so its schedules draw a
	// store latency and the faults that strike a batch (batch.go); the
	// world calls Run.StrikeBatch before it sends each batch. Nil: the
	// store has no batches (ledger.Memory), and none of these is drawn.
	Batches *Batching

	// stalls measures the test process's own scheduling stalls in a
	// world in real time (see stallProbe); nil in virtual time.
	stalls *stallProbe
	// excused counts the timing checks that were past their slack but
	// within it plus the process's measured stall, for the summary.
	excused atomic.Int64
	// batchCounts counts the batches and the batch faults that hit.
	batchCounts batchCounts
}

// LimiterTimeout is a Redis limiter's Timeout in w: half a lease, longer
// than a round trip over the slowest link a schedule draws.
func (w *World) LimiterTimeout() time.Duration { return w.Lease / 2 }

// Simulate runs w's seed budget, or the one seed asked for, each
// schedule as a subtest named after its seed.
func Simulate(t *testing.T, w *World) {
	seeds := simSeeds(t, w)
	if w.Setup != nil {
		w.Setup(t)
	}
	if !w.Virtual {
		w.stalls = startStallProbe()
		defer w.stalls.close()
	}
	start := time.Now()
	var failed atomic.Int64
	t.Run("schedules", func(t *testing.T) {
		for _, seed := range seeds {
			t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
				if w.Parallel > 1 {
					t.Parallel()
				}
				if v := runSchedule(t, w, seed); v != "" {
					failed.Add(1)
					t.Error(v)
				}
			})
		}
	})
	d := time.Since(start)
	t.Logf("%s: %d schedules in %v (%.1f/s), %d broke an invariant; %d timing checks were past their slack by no more than the process's own stall; rerun one with -run 'TestSimulation/%s/schedules/seed=N$'",
		w.Name, len(seeds), d.Round(time.Millisecond), float64(len(seeds))/d.Seconds(), failed.Load(), w.excused.Load(), w.Name)
	if w.Batches != nil {
		t.Logf("%s: %s", w.Name, w.batchCounts.summary())
	}
}

// simSeeds returns the seeds to run: the one asked for, or a window of N
// seeds from -sim.from (or RETRYBUDGET_SIM_FROM), which by default moves
// with the clock: a window per minute, none overlapping the next minutes'
// windows, so every CI run explores seeds no earlier run did.
func simSeeds(t *testing.T, w *World) []int64 {
	seed := *seedFlag
	if v := os.Getenv("RETRYBUDGET_SIM_SEED"); seed == 0 && v != "" {
		var err error
		if seed, err = strconv.ParseInt(v, 10, 64); err != nil {
			t.Fatalf("RETRYBUDGET_SIM_SEED=%q: %v", v, err)
		}
	}
	if seed != 0 {
		return []int64{seed}
	}
	n := w.CI
	if os.Getenv("RETRYBUDGET_LONG") == "1" {
		n = w.Long
	}
	if *schedulesFlag > 0 {
		n = *schedulesFlag
	}
	from := *fromFlag
	if v := os.Getenv("RETRYBUDGET_SIM_FROM"); from == 0 && v != "" {
		var err error
		if from, err = strconv.ParseInt(v, 10, 64); err != nil || from < 1 {
			t.Fatalf("RETRYBUDGET_SIM_FROM=%q: want a seed of at least 1", v)
		}
	}
	if from == 0 {
		minute := time.Now().Unix() / 60
		from = 1 + (minute*int64(n))%maxWindowStart
	}
	t.Logf("%s: seeds %d..%d (-sim.from=%d -sim.schedules=%d reruns this window)", w.Name, from, from+int64(n)-1, from, n)
	seeds := make([]int64, n)
	for i := range seeds {
		seeds[i] = from + int64(i)
	}
	return seeds
}

// runSchedule runs seed's schedule in w and returns the report of its
// violations, empty when it kept every invariant.
func runSchedule(t *testing.T, w *World, seed int64) string {
	s := drawSchedule(seed, w)
	var r *Run
	body := func(t *testing.T) {
		r = newSimRun(t, w, s)
		if s.Inbound != nil {
			r.runInbound()
		} else {
			r.run()
		}
	}
	if w.Virtual {
		// Time is virtual and advances when every goroutine of the
		// bubble is blocked.
		synctest.Test(t, body)
	} else {
		body(t)
	}
	if len(r.violations) == 0 {
		if *traceFlag {
			t.Logf("%s\n%s", s, strings.Join(r.trace, "\n"))
		}
		return ""
	}
	rerun := "a seed reruns its schedule and, mostly, its interleaving"
	if !w.Virtual {
		rerun = "in real time a seed reruns the faults, not the timing: it may take several runs, or -count=N"
	}
	return fmt.Sprintf("%s: INVARIANT BROKEN, seed %d\n  rerun: go test -run 'TestSimulation/%s' -sim.seed=%d -sim.trace -v . (in this package; %s)\n%s  broken:\n    %s\n  trace:\n    %s",
		w.Name, seed, w.Name, seed, rerun, s, strings.Join(r.violations, "\n    "), strings.Join(r.trace, "\n    "))
}
