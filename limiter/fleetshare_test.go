package limiter

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrybudget/retrybudget/internal/ctxsleep"
	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/internal/testenv"
)

// These fleet tests count what the limiter grants, from the workers' side:
// every worker process runs request loops for a set of owners against one
// boundary and reports the grants it received inside the run. They check
// the two promises that need a fleet: coalesced decisions stay exact, and
// the fair queue shares a saturated boundary evenly between owners.

// longEnv turns on the long runs of the fleet tests.
const longEnv = "RETRYBUDGET_LONG"

// shareConfig tells a TestShareWorker process what to do.
type shareConfig struct {
	Prefix string
	Limit  Limit
	Queue  bool
	Loops  map[string]int // owner -> request loops in this process
	Start  int64          // unix nanoseconds: when to begin
	Until  int64          // unix nanoseconds: when to stop
}

// shareReport is what a TestShareWorker process prints: grants per owner,
// and decisions and script runs for the round trips per decision.
type shareReport struct {
	Grants                map[string]int
	Decisions, ScriptRuns int64
}

// runShare runs procs worker processes with cfg for d and returns the
// grants per owner summed over the fleet, and decisions per script run.
func runShare(t *testing.T, procs int, cfg shareConfig, d time.Duration) (map[string]int, float64) {
	t.Helper()
	addr := fleetRedisAddr(t)
	start := time.Now().Add(500 * time.Millisecond)
	cfg.Prefix = redistest.Prefix(t)
	cfg.Start, cfg.Until = start.UnixNano(), start.Add(d).UnixNano()
	js, _ := json.Marshal(cfg)
	total := map[string]int{}
	var decisions, runs int64
	for i, line := range spawnFleet(t, procs, "TestShareWorker", string(js), addr, d) {
		var rep shareReport
		if err := json.Unmarshal([]byte(line), &rep); err != nil {
			t.Fatalf("worker %d report %q: %v", i, line, err)
		}
		for o, n := range rep.Grants {
			total[o] += n
		}
		decisions += rep.Decisions
		runs += rep.ScriptRuns
	}
	return total, float64(decisions) / float64(max(runs, 1))
}

// shareDuration is the length of a fleet run: 3s, or 10s in long mode.
func shareDuration() time.Duration {
	if os.Getenv(longEnv) != "" {
		return 10 * time.Second
	}
	return 3 * time.Second
}

func skipUnlessParent(t *testing.T) {
	if os.Getenv(fleetRoleEnv) != "" {
		t.Skip("worker process")
	}
	if testing.Short() {
		t.Skip("starts processes and runs for seconds")
	}
}

// TestFleetCoalescedAccuracy: 4 processes × 64 request loops on one 50/s
// limit (burst 50) with coalesced decisions are granted at most what the
// limit grants in the run (rate × time + burst) and at least half of it;
// at least 98% of it is the figure, asserted with RETRYBUDGET_FIGURES=1.
func TestFleetCoalescedAccuracy(t *testing.T) {
	skipUnlessParent(t)
	d := shareDuration()
	grants, perRun := runShare(t, 4, shareConfig{Limit: fleetLimit, Loops: map[string]int{"": 64}}, d)
	bound := int(fleetRate*d.Seconds()) + fleetLimit.Burst
	got := grants[""]
	t.Logf("4 processes x 64 loops, %v/s burst %d, %v: granted %d of at most %d (%.1f%%), %.1f decisions per round trip",
		fleetRate, fleetLimit.Burst, d, got, bound, 100*float64(got)/float64(bound), perRun)
	if got > bound {
		t.Errorf("granted %d, more than the limit grants in %v (%d)", got, d, bound)
	}
	if float64(got) < 0.5*float64(bound) {
		t.Errorf("granted %d, less than half of %d: coalesced decisions lose grants", got, bound)
	}
	if testenv.Figures() && float64(got) < 0.98*float64(bound) {
		t.Errorf("granted %d, less than 98%% of %d (%s=1)", got, bound, testenv.FiguresEnv)
	}
}

// TestFleetFairQueue: on a fleet of 2 processes sharing one 100/s
// boundary, owner A with 64 request loops and owner B with 2 each get at
// least 30% of the grants with the fair queue; A alone gets at least half
// the limit. Without the queue, the same load gives B far less. The
// figures, 45-55% each and A alone at least 95% of the limit, are asserted
// with RETRYBUDGET_FIGURES=1.
func TestFleetFairQueue(t *testing.T) {
	skipUnlessParent(t)
	d := shareDuration()
	limit := PerSecond(100)
	both := map[string]int{"A": 32, "B": 1} // per process
	fair, _ := runShare(t, 2, shareConfig{Limit: limit, Queue: true, Loops: both}, d)
	alone, _ := runShare(t, 2, shareConfig{Limit: limit, Queue: true, Loops: map[string]int{"A": 32}}, d)
	unfair, _ := runShare(t, 2, shareConfig{Limit: limit, Loops: both}, d)

	share := func(m map[string]int, o string) float64 { return float64(m[o]) / float64(m["A"]+m["B"]) }
	capacity := 100 * d.Seconds()
	t.Logf("2 processes, 100/s, %v, A 64 loops and B 2:", d)
	t.Logf("  fair queue:  A %d (%.1f%%) B %d (%.1f%%), %.1f%% of the limit", fair["A"], 100*share(fair, "A"), fair["B"], 100*share(fair, "B"), 100*float64(fair["A"]+fair["B"])/capacity)
	t.Logf("  no queue:    A %d (%.1f%%) B %d (%.1f%%)", unfair["A"], 100*share(unfair, "A"), unfair["B"], 100*share(unfair, "B"))
	t.Logf("  A alone, fair queue: %d (%.1f%% of the limit)", alone["A"], 100*float64(alone["A"])/capacity)
	for _, o := range []string{"A", "B"} {
		if s := share(fair, o); s < 0.30 {
			t.Errorf("fair queue: %s got %.1f%% of the grants, want at least 30%%", o, 100*s)
		}
		if s := share(fair, o); testenv.Figures() && (s < 0.45 || s > 0.55) {
			t.Errorf("fair queue: %s got %.1f%% of the grants, want 45-55%% (%s=1)", o, 100*s, testenv.FiguresEnv)
		}
	}
	if float64(alone["A"]) < 0.5*capacity {
		t.Errorf("A alone got %d grants, less than half the limit (%.0f)", alone["A"], capacity)
	}
	if testenv.Figures() && float64(alone["A"]) < 0.95*capacity {
		t.Errorf("A alone got %d grants, less than 95%% of the limit (%.0f) (%s=1)", alone["A"], capacity, testenv.FiguresEnv)
	}
	if share(unfair, "B") > 0.25 {
		t.Errorf("without the queue B got %.1f%%; the test no longer shows what the queue changes", 100*share(unfair, "B"))
	}
}

// TestShareWorker is the worker role of the tests above; it is skipped
// unless started by them.
func TestShareWorker(t *testing.T) {
	if os.Getenv(fleetRoleEnv) != "child" {
		t.Skip("only runs as a worker process of the fleet share tests")
	}
	var cfg shareConfig
	if err := json.Unmarshal([]byte(os.Getenv(fleetConfigEnv)), &cfg); err != nil {
		t.Fatal(err)
	}
	rdb := redistest.Client(t)
	runs := &scriptRuns{}
	rdb.AddHook(runs)
	rc := RedisConfig{BoundaryKey: redistest.BoundaryKey(), Limits: []Limit{cfg.Limit}, Prefix: cfg.Prefix, Timeout: time.Second}
	if cfg.Queue {
		rc.Queue = &FairQueue{}
	}
	l, err := NewRedis(rdb, rc)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = l.Allow(context.Background(), Request{Boundary: "warmup"}) // loads the script
	until := time.Unix(0, cfg.Until)
	ctx, cancel := context.WithDeadline(context.Background(), until)
	defer cancel()
	time.Sleep(time.Until(time.Unix(0, cfg.Start)))
	runs.n.Store(0)

	var mu sync.Mutex
	rep := shareReport{Grants: map[string]int{}}
	var decisions atomic.Int64
	var wg sync.WaitGroup
	for owner, n := range cfg.Loops {
		for range n {
			wg.Go(func() {
				granted := 0
				for ctx.Err() == nil {
					d, err := l.Allow(ctx, Request{Boundary: "b", Owner: owner})
					decisions.Add(1)
					switch {
					case err != nil:
						continue // the deadline: the loop ends
					case d.Fallback:
						t.Errorf("decided without Redis: %+v", d)
						return
					case d.Allowed:
						if time.Now().Before(until) {
							granted++
						}
					default:
						_ = ctxsleep.Sleep(ctx, d.RetryAfter)
					}
				}
				mu.Lock()
				rep.Grants[owner] += granted
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	rep.Decisions, rep.ScriptRuns = decisions.Load(), runs.n.Load()
	out, _ := json.Marshal(rep)
	fmt.Printf("%s%s\n", fleetResult, strings.TrimSpace(string(out)))
}

// scriptRuns is a go-redis hook that counts script runs (EVALSHA and EVAL).
type scriptRuns struct{ n atomic.Int64 }

func (c *scriptRuns) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *scriptRuns) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "evalsha" || cmd.Name() == "eval" {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (c *scriptRuns) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
