package limiter

import (
	"context"
	"errors"
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

// recordingHandler records what a component logged.
type recordingHandler = logrecorder.Recorder

// faultTimeout is the decision timeout under test; slack is what a loaded
// two-core machine may add on top of it.
const (
	faultTimeout = 50 * time.Millisecond
	faultSlack   = 150 * time.Millisecond
)

// TestRedisFault kills a private Redis mid-run and restarts it: decisions
// keep coming within the timeout as the policy says, the outage is logged
// once, and the limiter goes back to Redis by itself.
func TestRedisFault(t *testing.T) {
	for _, policy := range []FailMode{FailOpen, FailClosed} {
		for _, ctxTimeouts := range []bool{false, true} {
			name := fmt.Sprintf("%s/ContextTimeoutEnabled=%v", policy, ctxTimeouts)
			t.Run(name, func(t *testing.T) { testRedisFault(t, policy, ctxTimeouts) })
		}
	}
}

func testRedisFault(t *testing.T, policy FailMode, ctxTimeouts bool) {
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: ctxTimeouts})
	t.Cleanup(func() { _ = rdb.Close() })
	logs := &recordingHandler{}
	const boundary = "api.example.com#secret-credential"
	l, err := NewRedis(rdb, RedisConfig{
		Limits:        []Limit{PerSecond(1000).WithBurst(100)},
		BoundaryKey:   redistest.BoundaryKey(),
		Prefix:        redistest.Prefix(t),
		Timeout:       faultTimeout,
		OnUnavailable: policy,
		FallbackShare: 0.5,
		ProbeInterval: 100 * time.Millisecond,
		Logger:        slog.New(logs),
	})
	if err != nil {
		t.Fatal(err)
	}
	if l.detached == ctxTimeouts {
		t.Fatalf("detached = %v with ContextTimeoutEnabled = %v", l.detached, ctxTimeouts)
	}
	r := Request{Boundary: boundary}
	// The first decision dials and loads the script, which a loaded
	// machine may not finish within the 50ms timeout: wait for a healthy
	// decision rather than demand the first be one.
	waitRecovered(t, l, r)
	logs.Reset()

	srv.Kill()
	checkOutage(t, l, r, policy)
	if policy == FailOpen {
		checkFallbackLimits(t, l, r)
	}

	srv.Restart()
	waitRecovered(t, l, r)
	checkLogs(t, logs, boundary)
}

// TestRedisHang stops Redis with SIGSTOP, so connections stay open and
// nothing answers: the case where only the decision timeout, not a refused
// connection, bounds the wait. With ContextTimeoutEnabled false go-redis
// would wait out its 5s ReadTimeout.
func TestRedisHang(t *testing.T) {
	for _, ctxTimeouts := range []bool{false, true} {
		t.Run(fmt.Sprintf("ContextTimeoutEnabled=%v", ctxTimeouts), func(t *testing.T) {
			srv := redistest.Start(t)
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: ctxTimeouts})
			t.Cleanup(func() { _ = rdb.Close() })
			l, err := NewRedis(rdb, RedisConfig{
				Limits:        []Limit{PerSecond(1000)},
				BoundaryKey:   redistest.BoundaryKey(),
				Prefix:        redistest.Prefix(t),
				Timeout:       faultTimeout,
				OnUnavailable: FailClosed,
				ProbeInterval: 100 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			r := Request{Boundary: "b"}
			waitRecovered(t, l, r) // connected, script loaded
			resume := srv.Freeze(t)
			checkOutage(t, l, r, FailClosed)
			resume()
			waitRecovered(t, l, r)
		})
	}
}

// checkOutage makes decisions for a while with Redis down and checks each
// against the policy and the timeout.
func checkOutage(t *testing.T, l *Redis, r Request, policy FailMode) {
	t.Helper()
	stalls := stallmeter.Start()
	defer stalls.Close()
	end := time.Now().Add(400 * time.Millisecond) // several probe intervals
	n := 0
	for time.Now().Before(end) {
		start := time.Now()
		d, err := l.Allow(context.Background(), r)
		// A machine that stalled sleeping goroutines that long is told
		// apart from a decision that ignored its timeout.
		took := time.Since(start)
		if late, ok := stalls.Excused(took, faultTimeout+faultSlack); !ok {
			t.Fatalf("decision %d took %v with Redis down (the machine stalled up to %v); timeout %v", n, took, late, faultTimeout)
		} else if late > 0 {
			t.Logf("decision %d took %v, but the machine stalled sleeping goroutines up to %v", n, took, late)
		}
		switch policy {
		case FailOpen:
			if err != nil || !d.Fallback {
				t.Fatalf("decision %d: %+v, %v; want a fallback decision", n, d, err)
			}
		case FailClosed:
			var ue *UnavailableError
			if !errors.Is(err, ErrUnavailable) || !errors.As(err, &ue) || ue.Op != "allow" || ue.Err == nil {
				t.Fatalf("decision %d: %+v, %v; want an UnavailableError", n, d, err)
			}
			if d.Allowed {
				t.Fatalf("decision %d allowed while failing closed", n)
			}
		}
		n++
	}
	// Cooldown reports that the fleet may not have heard, but pauses this
	// process anyway.
	if err := l.Cooldown(context.Background(), "elsewhere", time.Now().Add(time.Minute)); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Cooldown with Redis down: %v, want ErrUnavailable", err)
	}
	if d, err := l.Allow(context.Background(), Request{Boundary: "elsewhere"}); err != nil || d.Reason != ReasonCooldown {
		t.Fatalf("Allow after Cooldown with Redis down: %+v, %v; want refused by cooldown", d, err)
	}
	// The outage costs one timeout per probe interval, not one per
	// decision, so decisions keep flowing.
	if n < 20 {
		t.Fatalf("only %d decisions in 400ms of outage", n)
	}
}

// checkFallbackLimits: the fallback is a limiter, not an open door. It
// holds FallbackShare (0.5) of 1000/s burst 100: burst 50, then 500/s.
func checkFallbackLimits(t *testing.T, l *Redis, r Request) {
	t.Helper()
	start := time.Now()
	allowed, refused := 0, 0
	for i := 0; i < 300; i++ {
		d := allow(t, l, r)
		if !d.Fallback {
			t.Fatalf("decision %d not from the fallback: %+v", i, d)
		}
		if d.Allowed {
			allowed++
		} else if d.Reason == ReasonRate {
			refused++
		}
	}
	if most := 50 + int(time.Since(start).Seconds()*500) + 1; allowed > most || refused == 0 {
		t.Fatalf("fallback allowed %d, refused %d of 300; want at most %d allowed", allowed, refused, most)
	}
}

// waitRecovered polls until decisions come from Redis again.
func waitRecovered(t *testing.T, l *Redis, r Request) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		d, err := l.Allow(context.Background(), r)
		if err == nil && !d.Fallback {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not recovered 5s after restart: %+v, %v", d, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkLogs: one line for the outage, one for the recovery, and no
// boundary in either.
func checkLogs(t *testing.T, h *recordingHandler, boundary string) {
	t.Helper()
	recs := h.All()
	if len(recs) != 2 || !strings.HasPrefix(recs[0], "WARN limiter: redis unavailable") ||
		!strings.HasPrefix(recs[1], "INFO limiter: redis available again") {
		t.Fatalf("log records %q, want one WARN and one INFO", recs)
	}
	for _, rec := range recs {
		if strings.Contains(rec, "secret") || strings.Contains(rec, boundary) {
			t.Fatalf("log record %q holds the boundary", rec)
		}
	}
}

// TestCallerDeadlineIsNotAnOutage: on a hung Redis, callers whose own
// deadline ends their round trip get their context's error, and Redis is
// not taken for down: a client that honours context deadlines sets the
// deadline on the socket, whose timeout can fire before the context's own
// timer ends it. Both the coalesced path and the one without coalescing.
func TestCallerDeadlineIsNotAnOutage(t *testing.T) {
	for _, maxBatch := range []int{0, 1} {
		t.Run(fmt.Sprintf("MaxBatch=%d", maxBatch), func(t *testing.T) {
			srv := redistest.Start(t)
			// No retries: a socket timeout then ends the command at once.
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true, MaxRetries: -1})
			t.Cleanup(func() { _ = rdb.Close() })
			l, err := NewRedis(rdb, RedisConfig{
				Limits:        []Limit{PerSecond(1000)},
				BoundaryKey:   redistest.BoundaryKey(),
				Prefix:        redistest.Prefix(t),
				Timeout:       5 * time.Second,
				OnUnavailable: FailClosed,
				MaxBatch:      maxBatch,
			})
			if err != nil {
				t.Fatal(err)
			}
			r := Request{Boundary: "b"}
			waitRecovered(t, l, r) // connected, script loaded
			thaw := srv.Freeze(t)
			defer thaw()
			const calls = 100
			unavailable := 0
			for range calls {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
				_, err := l.Allow(ctx, r)
				cancel()
				switch {
				case errors.Is(err, ErrUnavailable):
					unavailable++
				case !errors.Is(err, context.DeadlineExceeded):
					t.Fatalf("Allow on a hung Redis past the caller's deadline: %v, want context.DeadlineExceeded", err)
				}
			}
			if unavailable > 0 || l.health.Down() {
				t.Errorf("%d of %d callers whose own deadline passed were told Redis is unavailable (down %v)", unavailable, calls, l.health.Down())
			}
		})
	}
}
