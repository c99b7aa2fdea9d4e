package limiter

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/internal/testenv"
)

// The fleet test runs the limiter the way it is deployed: several OS
// processes sharing one credential against one provider. The parent test
// process plays the provider (an httptest server on loopback that enforces
// its own limit) and re-executes this test binary as the workers, selected
// by fleetRoleEnv.

const (
	fleetRoleEnv   = "LIMITER_FLEET_ROLE"   // "child" in a worker process
	fleetConfigEnv = "LIMITER_FLEET_CONFIG" // a JSON fleetConfig
	fleetResult    = "FLEET-RESULT "        // prefixes the worker's report line

	fleetWorkers = 4
	fleetRate    = 50 // the provider's limit, and the limiter's, per second
	fleetToken   = "Bearer fleet-shared-credential"
)

// fleetConfig tells a worker what to do.
type fleetConfig struct {
	Mode   string // "redis" or "local"
	URL    string // the provider
	Prefix string // Redis key prefix shared by the fleet
	Start  int64  // unix nanoseconds: when to begin
	Until  int64  // unix nanoseconds: when to stop
}

// workerReport is what a worker prints when done.
type workerReport struct {
	Decisions, Fallback, Sent, OK, TooMany, Unavailable, Errors int
}

// fleetLimit is the provider's documented limit: 50/s with bursts of 50,
// configured identically in the limiter.
var fleetLimit = Limit{Rate: fleetRate, Period: time.Second, Burst: fleetRate}

// provider is the fake provider: a token bucket of 50/s, burst 50, the
// usual shape of a payment API's limit. It answers 429 above it, and can be
// told to answer one request with 503 and Retry-After.
type provider struct {
	// mu guards everything below.
	mu       sync.Mutex
	bucket   *rate.Limiter
	arrivals []arrival
	outageAt time.Time // the first request after this gets a 503; zero for none
	outage   time.Time // when the 503 was served
	badAuth  int
}

type arrival struct {
	at     time.Time
	status int
}

func (p *provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/warmup" {
		return // not metered: a worker opening its keep-alive connection
	}
	p.mu.Lock()
	now := time.Now()
	status := http.StatusOK
	switch {
	case r.Header.Get("Authorization") != fleetToken:
		p.badAuth++
		status = http.StatusUnauthorized
	case !p.outageAt.IsZero() && p.outage.IsZero() && !now.Before(p.outageAt):
		p.outage = now
		status = http.StatusServiceUnavailable
	case !p.bucket.AllowN(now, 1):
		status = http.StatusTooManyRequests
	}
	p.arrivals = append(p.arrivals, arrival{at: now, status: status})
	p.mu.Unlock()
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(status)
}

// fleetFigures summarises one run, from the provider's side.
type fleetFigures struct {
	arrivals, ok, tooMany int
	rejectShare           float64 // 429s per arrival
	okRate, steadyOKRate  float64 // accepted per second: whole run, and after the first second
	duringPause           int     // arrivals while the boundary was paused (cooldown runs)
}

func (f fleetFigures) String() string {
	return fmt.Sprintf("arrivals=%d ok=%d 429=%d (%.2f%% of arrivals) accepted=%.1f/s steady=%.1f/s (%.0f%% of limit)",
		f.arrivals, f.ok, f.tooMany, 100*f.rejectShare, f.okRate, f.steadyOKRate, 100*f.steadyOKRate/fleetRate)
}

// runFleet starts a provider and fleetWorkers worker processes for the
// given duration and returns the provider's figures.
func runFleet(t *testing.T, mode, redisAddr string, d time.Duration, outageAfter time.Duration) fleetFigures {
	t.Helper()
	p := &provider{bucket: rate.NewLimiter(fleetRate, fleetRate)}
	srv := httptest.NewServer(p)
	defer srv.Close()

	// Workers start together, after the slowest has had time to start.
	start := time.Now().Add(500 * time.Millisecond)
	if outageAfter > 0 {
		p.mu.Lock()
		p.outageAt = start.Add(outageAfter)
		p.mu.Unlock()
	}
	cfg, _ := json.Marshal(fleetConfig{
		Mode: mode, URL: srv.URL, Prefix: redistest.Prefix(t),
		Start: start.UnixNano(), Until: start.Add(d).UnixNano(),
	})
	reports := spawnFleet(t, fleetWorkers, "TestFleetWorker", string(cfg), redisAddr, d)
	t.Logf("%s workers: %s", mode, strings.Join(reports, " | "))

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.badAuth > 0 {
		t.Fatalf("%d requests without the shared credential", p.badAuth)
	}
	var f fleetFigures
	steadyFrom := start.Add(time.Second)
	steady := 0
	for _, a := range p.arrivals {
		f.arrivals++
		switch a.status {
		case http.StatusOK:
			f.ok++
			if !a.at.Before(steadyFrom) {
				steady++
			}
		case http.StatusTooManyRequests:
			f.tooMany++
		}
		// The worker that got the 503 pauses everyone for Retry-After
		// (1s); arrivals that left before the pause reached Redis (the
		// 503's way back, the worker's Cooldown round trip, a stall of a
		// loaded machine) are let off by 300ms.
		if !p.outage.IsZero() && a.at.After(p.outage.Add(300*time.Millisecond)) && a.at.Before(p.outage.Add(950*time.Millisecond)) {
			f.duringPause++
		}
	}
	if f.arrivals > 0 {
		f.rejectShare = float64(f.tooMany) / float64(f.arrivals)
	}
	f.okRate = float64(f.ok) / d.Seconds()
	f.steadyOKRate = float64(steady) / (d - time.Second).Seconds()
	return f
}

// spawnFleet runs n copies of this test binary running only the test
// named worker, with the JSON config cfg and Redis at redisAddr, for about
// d, and returns the report line each printed.
func spawnFleet(t *testing.T, n int, worker, cfg, redisAddr string, d time.Duration) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	reports := make([]string, n)
	for i := range n {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+worker+"$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), fleetRoleEnv+"=child", fleetConfigEnv+"="+cfg, "REDIS_ADDR="+redisAddr)
		wg.Go(func() {
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("worker %d: %v\n%s", i, err, out)
			}
			for _, line := range strings.Split(string(out), "\n") {
				if _, rep, ok := strings.Cut(line, fleetResult); ok {
					reports[i] = rep
				}
			}
		})
	}
	wg.Wait()
	return reports
}

// fleetRedisAddr returns the Redis the workers share: REDIS_ADDR, or a
// private server owned by this test.
func fleetRedisAddr(t *testing.T) string {
	if addr := os.Getenv("REDIS_ADDR"); addr != "" {
		redistest.Client(t) // fails the test early if it does not answer
		return addr
	}
	return redistest.Start(t).Addr
}

// TestFleet: four processes share one 50/s credential. With the Redis
// limiter the fleet sends no more than the limit grants in the run (rate ×
// time + burst, with half a second for the last decisions' way to the
// provider) and the provider answers 429 to at most 10% of arrivals; with a
// Local limiter per process the fleet sends about four times the limit and
// most arrivals get 429. The figures, at most 1% 429s and at least 95% of
// the limit accepted in steady state, are asserted with
// RETRYBUDGET_FIGURES=1 (a loaded machine delays arrivals into clumps).
func TestFleet(t *testing.T) {
	if os.Getenv(fleetRoleEnv) != "" {
		t.Skip("worker process")
	}
	if testing.Short() {
		t.Skip("starts processes and runs for seconds")
	}
	addr := fleetRedisAddr(t)
	const d = 3 * time.Second
	shared := runFleet(t, "redis", addr, d, 0)
	local := runFleet(t, "local", addr, d, 0)
	t.Logf("fleet of %d processes, provider limit %d/s burst %d, %v:", fleetWorkers, fleetRate, fleetRate, d)
	t.Logf("  limiter.Redis (shared): %v", shared)
	t.Logf("  limiter.Local (each):   %v", local)

	if bound := int(fleetRate*(d+500*time.Millisecond).Seconds()) + fleetLimit.Burst; shared.arrivals > bound {
		t.Errorf("Redis: %d arrivals in %v, more than the limit grants (%d)", shared.arrivals, d, bound)
	}
	if shared.rejectShare > 0.10 {
		t.Errorf("Redis: provider rejected %.2f%% of arrivals, want at most 10%%", 100*shared.rejectShare)
	}
	if testenv.Figures() {
		if shared.rejectShare > 0.01 {
			t.Errorf("Redis: provider rejected %.2f%% of arrivals, want at most 1%% (%s=1)", 100*shared.rejectShare, testenv.FiguresEnv)
		}
		if shared.steadyOKRate < 0.95*fleetRate {
			t.Errorf("Redis: accepted %.1f/s in steady state, want at least %.1f/s (%s=1)", shared.steadyOKRate, 0.95*fleetRate, testenv.FiguresEnv)
		}
	}
	// The contrast that makes the test meaningful: the same fleet without
	// a shared limiter overloads the provider.
	if local.rejectShare < 0.5 {
		t.Errorf("Local: provider rejected only %.2f%% of arrivals; the test no longer shows the overload", 100*local.rejectShare)
	}
}

// TestFleetCooldown: one worker gets a 503 with Retry-After: 1 and calls
// Cooldown; with Redis every other process pauses too, with Local only it
// does.
func TestFleetCooldown(t *testing.T) {
	if os.Getenv(fleetRoleEnv) != "" {
		t.Skip("worker process")
	}
	if testing.Short() {
		t.Skip("starts processes and runs for seconds")
	}
	addr := fleetRedisAddr(t)
	const d = 2500 * time.Millisecond
	shared := runFleet(t, "redis", addr, d, time.Second)
	local := runFleet(t, "local", addr, d, time.Second)
	t.Logf("arrivals during the 1s pause after a 503 Retry-After: 1: Redis %d, Local %d", shared.duringPause, local.duringPause)
	if shared.duringPause != 0 {
		t.Errorf("Redis: %d requests reached the provider during the fleet-wide pause", shared.duringPause)
	}
	if local.duringPause == 0 {
		t.Errorf("Local: no requests during one process's pause; the test no longer shows the difference")
	}
}

// TestFleetWorker is the worker role of the fleet tests; it is skipped
// unless started by them.
func TestFleetWorker(t *testing.T) {
	if os.Getenv(fleetRoleEnv) != "child" {
		t.Skip("only runs as a worker process of TestFleet")
	}
	var cfg fleetConfig
	if err := json.Unmarshal([]byte(os.Getenv(fleetConfigEnv)), &cfg); err != nil {
		t.Fatal(err)
	}
	var lim Limiter
	switch cfg.Mode {
	case "redis":
		// A generous timeout: this test is about coordination, and a
		// two-core CI machine running four race-instrumented workers can
		// stall a round trip past the 50ms default, which would hand
		// decisions to the uncoordinated fallback (see TestRedisFault).
		l, err := NewRedis(redistest.Client(t), RedisConfig{BoundaryKey: redistest.BoundaryKey(), Limits: []Limit{fleetLimit}, Prefix: cfg.Prefix, Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		lim = l
	case "local":
		l, err := NewLocal(LocalConfig{Limits: []Limit{fleetLimit}})
		if err != nil {
			t.Fatal(err)
		}
		lim = l
	default:
		t.Fatalf("mode %q", cfg.Mode)
	}
	rep := runWorker(t, lim, cfg)
	out, _ := json.Marshal(rep)
	fmt.Printf("%s%s\n", fleetResult, out)
}

func runWorker(t *testing.T, lim Limiter, cfg fleetConfig) workerReport {
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	boundary := ByCredential()
	ctx := context.Background()
	until := time.Unix(0, cfg.Until)

	// A long-running worker has its connections open already: open them
	// before the start, so the first metered request does not pay for a
	// TCP handshake (or the first decision for loading the script).
	if resp, err := client.Get(cfg.URL + "/warmup"); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	_, _ = lim.Allow(ctx, Request{Boundary: "warmup"})
	time.Sleep(time.Until(time.Unix(0, cfg.Start)))
	var rep workerReport
	for time.Now().Before(until) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", fleetToken)
		b := boundary(req)
		d, err := lim.Allow(ctx, Request{Boundary: b})
		rep.Decisions++
		if err != nil {
			rep.Unavailable++
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if d.Fallback {
			rep.Fallback++
		}
		if !d.Allowed {
			time.Sleep(min(d.RetryAfter, time.Until(until)))
			continue
		}
		rep.Sent++
		resp, err := client.Do(req)
		if err != nil {
			rep.Errors++
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			rep.OK++
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			rep.TooMany++
			if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
				_ = lim.Cooldown(ctx, b, time.Now().Add(time.Duration(secs)*time.Second))
			}
		}
	}
	return rep
}
