package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/internal/testenv"
)

// TestMain makes the test binary a worker when the fleet starts it as
// one: run re-executes os.Executable, which under go test is this binary,
// so the parent runs in the test process and the workers are real
// processes running the same workerMain as `go run ./examples/fleet`.
func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) != "" {
		os.Exit(workerMain())
	}
	goleak.VerifyTestMain(m)
}

// TestFleetSharesOneKeyFairlyWithoutDuplicates runs the example for three
// seconds: three worker processes, acme with 48 job loops and zeta with 3,
// on one API key the provider meters at 50 req/s. Counted at the
// provider: no charge is applied twice and no request is refused; each
// tenant gets at least 35% of the charges (an even split is 50%: measured
// 45-55% on 2 cores, with up to three runs of this test at once; without the
// fair queue zeta gets 5-7%); the fleet uses at least 70% of the limit
// (measured 92-99%). Every re-delivered order is answered from the
// ledger, and every worker process exits 0. Without the ledger the same
// run counts about 20 duplicate effects.
func TestFleetSharesOneKeyFairlyWithoutDuplicates(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three processes and runs for seconds")
	}
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		addr = redistest.Start(t).Addr
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	const d, rate = 3 * time.Second, 50
	began := time.Now()
	s, err := run(context.Background(), options{redis: addr, duration: d, rate: rate, exe: exe, log: &logs})
	took := time.Since(began)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, logs.String())
	}
	var out bytes.Buffer
	s.write(&out)
	t.Logf("run took %v\n%s%s", took.Round(time.Millisecond), logs.String(), out.String())

	if err := s.check(); err != nil {
		t.Errorf("check: %v", err)
	}
	if s.provider.Duplicates != 0 {
		t.Errorf("duplicate effects = %d, want 0", s.provider.Duplicates)
	}
	// The limiter grants at most 50/s by Redis TIME; the provider's burst
	// (10, 200ms worth) absorbs the jitter of delivery, so a 429 means the
	// fleet overshot the limit.
	if s.provider.Limited != 0 {
		t.Errorf("provider answered 429 %d times, want 0", s.provider.Limited)
	}
	total := s.effects()
	if limit := float64(rate) * s.duration.Seconds(); float64(total) < 0.7*limit {
		t.Errorf("%d charges applied, less than 70%% of the limit's %.0f", total, limit)
	}
	for _, tn := range s.tenants {
		if share := float64(tn.effects) / float64(max(total, 1)); share < 0.35 {
			t.Errorf("%s got %.1f%% of the charges (%d of %d), want at least 35%%", tn.name, 100*share, tn.effects, total)
		}
		if tn.Reruns == 0 || tn.Replayed != tn.Reruns || tn.RerunsSent != 0 {
			t.Errorf("%s: %d re-delivered orders, %d replayed, %d sent; want some, all replayed, none sent",
				tn.name, tn.Reruns, tn.Replayed, tn.RerunsSent)
		}
		if tn.Stopped != 0 {
			t.Errorf("%s: %d orders stopped, want 0", tn.name, tn.Stopped)
		}
		// Every charge a worker saw done was applied, and every applied
		// charge is one a worker saw done, holds, or had in hand, maybe
		// sent, when the end of the run cut its call.
		if tn.Charged > tn.effects || tn.effects > tn.Charged+tn.Held+tn.Interrupted {
			t.Errorf("%s: provider applied %d; workers charged %d, hold %d, were cut after sending %d",
				tn.name, tn.effects, tn.Charged, tn.Held, tn.Interrupted)
		}
	}
	if len(s.codes) != workers {
		t.Errorf("%d exit statuses, want %d", len(s.codes), workers)
	}
	for i, c := range s.codes {
		if c != 0 {
			t.Errorf("worker %d exited %d", i+1, c)
		}
	}
	for _, want := range []string{"share of limit", "0 answered 429", "0 duplicate effects", "3 of 3 exited 0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// TestPrivateRedisStartsAndStops: without -redis and REDIS_ADDR the
// example starts a redis-server of its own that answers, and stop ends it
// and removes its directory.
func TestPrivateRedisStartsAndStops(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		testenv.Unavailable(t, redistest.RequireEnv, "no redis-server on PATH")
	}
	ctx := context.Background()
	r, err := startRedis(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := pingRedis(ctx, r.addr); err != nil {
		r.stop()
		t.Fatal(err)
	}
	r.stop()
	if c, err := net.DialTimeout("tcp", r.addr, time.Second); err == nil {
		c.Close()
		t.Errorf("the private Redis on %s still accepts connections after stop", r.addr)
	}
	if _, err := os.Stat(r.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("its directory %s is left: %v", r.dir, err)
	}
}

// TestNoRedisSaysHowToGetOne: without redis-server on PATH, the error
// names every way to give the example a Redis.
func TestNoRedisSaysHowToGetOne(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := startRedis(context.Background())
	if err == nil {
		t.Fatal("startRedis succeeded without redis-server on PATH")
	}
	for _, want := range []string{"-redis", "REDIS_ADDR", "redis-server"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}
