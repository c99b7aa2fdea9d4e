package budget

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrybudget/retrybudget/internal/logrecorder"
	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/internal/stallmeter"
)

// faultTimeout is the decision timeout under test; faultSlack is what a
// loaded two-core machine running the race detector may add on top.
const (
	faultTimeout = 50 * time.Millisecond
	faultSlack   = 150 * time.Millisecond
	faultProbe   = 100 * time.Millisecond
)

// recordingHandler records what a component logged.
type recordingHandler = logrecorder.Recorder

// faultClient returns a client for srv that fails fast when nothing
// listens: go-redis's default retries would keep dialling for about two
// seconds after a decision has given up, in goroutines goleak would see.
func faultClient(t *testing.T, addr string, ctxTimeouts bool) *redis.Client {
	rdb := redis.NewClient(&redis.Options{
		Addr:                  addr,
		ContextTimeoutEnabled: ctxTimeouts,
		MaxRetries:            -1,
		DialerRetries:         1,
	})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// faultDest holds a credential-like secret, which must not reach the logs.
const faultDest = "api.example.com#sk_live_s3cret"

// faultRule is deterministic over the test's few seconds: no floor, so the
// local fallback's answers depend on the counts alone and can be compared
// with a reference Local fed the same deposits.
var faultRule = Config{Percent: 0.5, MinRetriesPerSec: -1}

// TestRedisFault kills a private Redis mid-run and restarts it: every
// decision comes within the timeout as the policy says, the outage is
// logged once, and sharing resumes by itself.
func TestRedisFault(t *testing.T) {
	downs := []struct {
		name string
		down func(*redistest.Server)
	}{
		{"kill", (*redistest.Server).Kill}, // a crash: connections reset
		{"stop", (*redistest.Server).Stop}, // a shutdown: connections closed
	}
	for _, down := range downs {
		for _, policy := range []FailMode{FailOpen, FailClosed} {
			for _, ctxTimeouts := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s/ContextTimeoutEnabled=%v", down.name, policy, ctxTimeouts)
				t.Run(name, func(t *testing.T) { testRedisFault(t, down.down, policy, ctxTimeouts) })
			}
		}
	}
}

func testRedisFault(t *testing.T, down func(*redistest.Server), policy FailMode, ctxTimeouts bool) {
	srv := redistest.Start(t)
	logs := &recordingHandler{}
	cfg := RedisConfig{
		Config:        faultRule,
		Prefix:        redistest.Prefix(t),
		Timeout:       faultTimeout,
		OnUnavailable: policy,
		ProbeInterval: faultProbe,
		Logger:        slog.New(logs),
	}
	b := mustRedis(t, faultClient(t, srv.Addr, ctxTimeouts), cfg)
	peer := newRedis(t, faultClient(t, srv.Addr, ctxTimeouts), RedisConfig{Config: faultRule, Prefix: cfg.Prefix})
	if b.detached == ctxTimeouts {
		t.Fatalf("detached = %v with ContextTimeoutEnabled = %v", b.detached, ctxTimeouts)
	}
	ref := NewLocal(faultRule)
	both := func(n int) {
		deposit(b, faultDest, n)
		deposit(ref, faultDest, n)
	}

	both(20)
	healthy(t, b, ref)
	// A first round trip that outlasted the timeout on the way logged an
	// outage of its own.
	logs.Reset()

	down(srv)
	checkOutage(t, b, ref, both, policy)

	srv.Restart()
	waitShared(t, b, peer)
	checkLogs(t, logs)
}

// TestRedisHang stops Redis with SIGSTOP, so connections stay open and
// nothing answers: the case where only the decision timeout, not a refused
// connection, bounds the wait. With ContextTimeoutEnabled false go-redis
// alone would wait out its 3s ReadTimeout.
func TestRedisHang(t *testing.T) {
	for _, ctxTimeouts := range []bool{false, true} {
		t.Run(fmt.Sprintf("ContextTimeoutEnabled=%v", ctxTimeouts), func(t *testing.T) {
			srv := redistest.Start(t)
			cfg := RedisConfig{
				Config:        faultRule,
				Prefix:        redistest.Prefix(t),
				Timeout:       faultTimeout,
				OnUnavailable: FailClosed,
				ProbeInterval: faultProbe,
			}
			b := mustRedis(t, faultClient(t, srv.Addr, ctxTimeouts), cfg)
			peer := newRedis(t, faultClient(t, srv.Addr, ctxTimeouts), RedisConfig{Config: faultRule, Prefix: cfg.Prefix})
			deposit(b, faultDest, 10)
			healthy(t, b, nil)
			resume := srv.Freeze(t)
			checkOutage(t, b, nil, func(n int) { deposit(b, faultDest, n) }, FailClosed)
			resume()
			waitShared(t, b, peer)
		})
	}
}

// healthy waits until b decides from Redis. The first round trip to a
// fresh server (a dial, EVALSHA, then EVAL) may outlast the short timeout
// under test on a loaded machine; fallback decisions on the way are
// mirrored on ref, which must keep seeing what b's fallback sees.
func healthy(t *testing.T, b *Redis, ref *Local) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		d := b.Withdraw(context.Background(), faultDest)
		if !d.Fallback {
			if !d.Allowed {
				t.Fatalf("healthy: %+v; want allowed", d)
			}
			return
		}
		if ref != nil {
			ref.Withdraw(context.Background(), faultDest)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no decision from Redis within 5s: %+v", d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkOutage makes decisions for a while with Redis down and checks each
// against the policy and the timeout: failing open, each must equal the
// reference Local's (fed the same deposits) and be a Fallback; failing
// closed, each must be refused and a Fallback.
func checkOutage(t *testing.T, b *Redis, ref *Local, depositBoth func(int), policy FailMode) {
	t.Helper()
	stalls := stallmeter.Start()
	defer stalls.Close()
	end := time.Now().Add(4 * faultProbe) // several probes
	var slowest time.Duration
	n := 0
	for time.Now().Before(end) {
		probe := b.health.NextProbe()
		start := time.Now()
		depositBoth(1)
		d := b.Withdraw(context.Background(), faultDest)
		took := time.Since(start)
		slowest = max(slowest, took)
		probed := !b.health.NextProbe().Equal(probe)
		if late, ok := stalls.Excused(took, faultTimeout+faultSlack); !ok {
			t.Fatalf("decision %d took %v with Redis down (probed Redis: %v; the machine stalled up to %v); timeout %v",
				n, took, probed, late, faultTimeout)
		} else if late > 0 {
			t.Logf("decision %d took %v (probed Redis: %v), but the machine stalled sleeping goroutines up to %v", n, took, probed, late)
		}
		if !d.Fallback {
			t.Fatalf("decision %d: %+v with Redis down; want Fallback", n, d)
		}
		switch policy {
		case FailOpen:
			want := ref.Withdraw(context.Background(), faultDest)
			want.Fallback = true
			if d != want {
				t.Fatalf("decision %d: %+v; want the local rule's %+v", n, d, want)
			}
		case FailClosed:
			if d.Allowed {
				t.Fatalf("decision %d allowed while failing closed: %+v", n, d)
			}
		}
		n++
	}
	t.Logf("%d decisions in %v of outage, slowest (deposit and withdrawal) %v; machine stalls up to %v",
		n, 4*faultProbe, slowest, stalls.Worst())
	// The outage costs one timeout per probe interval, not one per
	// decision, so decisions keep flowing.
	if n < 20 {
		t.Fatalf("only %d decisions in %v of outage", n, 4*faultProbe)
	}
}

// waitShared polls until b's decisions come from Redis again, then checks
// that b and peer, two processes, share one budget once more.
func waitShared(t *testing.T, b, peer *Redis) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, x := range []*Redis{b, peer} {
		for {
			d := x.Withdraw(context.Background(), faultDest)
			if !d.Fallback {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("still falling back 5s after Redis came back: %+v", d)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// The server came back empty (no persistence), or still holds what
	// it had: compare counts before and after b's deposits reach it. A
	// round trip of b's that outlasts the short timeout on a loaded
	// machine drops its deposits, so try again.
	for {
		before := peer.Withdraw(context.Background(), faultDest)
		deposit(b, faultDest, 40)
		sent := b.Withdraw(context.Background(), faultDest) // sends the 40
		after := peer.Withdraw(context.Background(), faultDest)
		if !sent.Fallback && !before.Fallback && !after.Fallback {
			if after.Deposits != before.Deposits+40 {
				t.Fatalf("peer saw %+v then %+v; want 40 more deposits shared", before, after)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no shared decision 5s after Redis came back: %+v, %+v, %+v", before, sent, after)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkLogs: one line for the outage, one for the recovery, and no
// destination in either. A round trip after the recovery that outlasts the
// short timeout on a loaded machine is an outage of its own, logged the
// same way, so the lines come in such pairs: never two of a kind in a row.
func checkLogs(t *testing.T, h *recordingHandler) {
	t.Helper()
	recs := h.All()
	if len(recs) == 0 || len(recs)%2 != 0 {
		t.Fatalf("log records %q, want one WARN and one INFO per outage", recs)
	}
	for i, rec := range recs {
		want := "WARN budget: redis unavailable"
		if i%2 == 1 {
			want = "INFO budget: redis available again"
		}
		if !strings.HasPrefix(rec, want) {
			t.Fatalf("log records %q, want one WARN and one INFO per outage", recs)
		}
	}
	for _, rec := range recs {
		if strings.Contains(rec, "s3cret") || strings.Contains(rec, faultDest) {
			t.Fatalf("log record %q holds the destination", rec)
		}
	}
	t.Logf("logged: %q", recs)
}

// TestCallerDeadlineIsNotAnOutage: on a hung Redis, withdrawals whose own
// deadline ends their round trip do not take Redis for down: a client that
// honours context deadlines sets the deadline on the socket, whose timeout
// can fire before the context's own timer ends it.
func TestCallerDeadlineIsNotAnOutage(t *testing.T) {
	srv := redistest.Start(t)
	b := mustRedis(t, faultClient(t, srv.Addr, true), RedisConfig{
		Config:        faultRule,
		Prefix:        redistest.Prefix(t),
		Timeout:       5 * time.Second,
		OnUnavailable: FailClosed,
	})
	deposit(b, faultDest, 10)
	healthy(t, b, nil)
	resume := srv.Freeze(t)
	defer resume()
	const calls = 100
	for i := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		b.Withdraw(ctx, faultDest)
		cancel()
		if b.health.Down() {
			t.Fatalf("Redis taken for down after %d withdrawals whose own 10ms deadline passed (Timeout 5s)", i+1)
		}
	}
}
