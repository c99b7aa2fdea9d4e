package limiter

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/internal/stallmeter"
)

// TestCoalescedAllowReturnsWithinTimeout: on a hung Redis, a caller that
// waits behind a batch in flight, and one that arrives while the batch it
// joined is in flight, each return within the decision Timeout of their
// own call (plus the machine's slack), not after the batch ahead of them
// and then their own.
func TestCoalescedAllowReturnsWithinTimeout(t *testing.T) {
	for _, ctxTimeouts := range []bool{false, true} {
		t.Run(fmt.Sprintf("ContextTimeoutEnabled=%v", ctxTimeouts), func(t *testing.T) {
			testCoalescedTimeout(t, ctxTimeouts)
		})
	}
}

func testCoalescedTimeout(t *testing.T, ctxTimeouts bool) {
	const timeout = 200 * time.Millisecond
	l, r, thaw := frozenCoalescing(t, ctxTimeouts, timeout)
	defer thaw()
	k := groupKey{boundary: r.Boundary}
	stalls := stallmeter.Start()
	defer stalls.Close()

	type result struct {
		who  string
		took time.Duration
		err  error
	}
	results := make(chan result, 3)
	call := func(who string) {
		start := time.Now()
		_, err := l.Allow(context.Background(), r)
		results <- result{who, time.Since(start), err}
	}
	go call("leader")
	// The leader's batch is in flight once its group exists.
	waitUntil(t, func() bool { return l.batch.inFlight(k) })
	go call("waiting behind a batch")
	waitUntil(t, func() bool { return l.batch.waitingIn(k) == 1 })
	// The leader's round trip times out, the driver takes the waiting
	// caller as its batch; the next caller waits behind that one.
	waitUntil(t, func() bool { return l.batch.waitingIn(k) == 0 })
	go call("joining a driven batch")

	for range 3 {
		res := <-results
		if !errors.Is(res.err, ErrUnavailable) {
			t.Errorf("%s: %v, want ErrUnavailable", res.who, res.err)
		}
		if late, ok := stalls.Excused(res.took, timeout+faultSlack); !ok {
			t.Errorf("%s returned after %v (the machine stalled up to %v); Timeout %v", res.who, res.took, late, timeout)
		} else {
			t.Logf("%s returned after %v", res.who, res.took)
		}
	}
}

// frozenCoalescing returns a coalescing, fail-closed limiter with the
// given Timeout on a private Redis that it has reached once (connected,
// script loaded) and that is now frozen, the request it decided, and the
// thaw. Its burst of 10 leaves tokens for requests that still reach Redis
// once it thaws, and every caller tries Redis (no probe interval).
func frozenCoalescing(t *testing.T, ctxTimeouts bool, timeout time.Duration) (*Redis, Request, func()) {
	t.Helper()
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: ctxTimeouts})
	t.Cleanup(func() { _ = rdb.Close() })
	l, err := NewRedis(rdb, RedisConfig{
		Limits:        []Limit{PerSecond(1000).WithBurst(10)},
		BoundaryKey:   redistest.BoundaryKey(),
		Prefix:        redistest.Prefix(t),
		Timeout:       timeout,
		OnUnavailable: FailClosed,
		ProbeInterval: time.Nanosecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	r := Request{Boundary: "b"}
	waitRecovered(t, l, r)
	return l, r, srv.Freeze(t)
}

// waitUntil polls cond until it holds, for state another goroutine reaches
// without a signal to wait on.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCoalescedLeaderReturnsWhenItsContextEnds: on a hung Redis, the caller
// whose round trip is in flight returns its context's error as soon as its
// context ends, well within the decision Timeout, and the caller waiting
// behind it still gets its decision once Redis answers.
func TestCoalescedLeaderReturnsWhenItsContextEnds(t *testing.T) {
	for _, ctxTimeouts := range []bool{false, true} {
		t.Run(fmt.Sprintf("ContextTimeoutEnabled=%v", ctxTimeouts), func(t *testing.T) {
			testCoalescedLeaderContext(t, ctxTimeouts)
		})
	}
}

func testCoalescedLeaderContext(t *testing.T, ctxTimeouts bool) {
	const (
		timeout = 5 * time.Second
		// deadline leaves a loaded machine time to line the second caller
		// up behind the leader's round trip.
		deadline = 300 * time.Millisecond
	)
	l, r, thaw := frozenCoalescing(t, ctxTimeouts, timeout)
	defer thaw()
	k := groupKey{boundary: r.Boundary}
	stalls := stallmeter.Start()
	defer stalls.Close()

	type result struct {
		d    Decision
		took time.Duration
		err  error
	}
	leader, waiter := make(chan result, 1), make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		start := time.Now()
		d, err := l.Allow(ctx, r)
		leader <- result{d, time.Since(start), err}
	}()
	waitUntil(t, func() bool { return l.batch.inFlight(k) })
	go func() {
		d, err := l.Allow(context.Background(), r)
		waiter <- result{d, 0, err}
	}()
	waitUntil(t, func() bool { return l.batch.waitingIn(k) == 1 })

	res := <-leader
	if !errors.Is(res.err, context.DeadlineExceeded) || errors.Is(res.err, ErrUnavailable) {
		t.Errorf("leader: %v, want its context's DeadlineExceeded", res.err)
	}
	if late, ok := stalls.Excused(res.took, deadline+faultSlack); !ok {
		t.Errorf("leader returned after %v (the machine stalled up to %v); its deadline %v, Timeout %v", res.took, late, deadline, timeout)
	}
	thaw()
	if res := <-waiter; res.err != nil || !res.d.Allowed {
		t.Errorf("the caller behind the leader: %+v, %v; want allowed once Redis answers", res.d, res.err)
	}
}

// TestCallerTimedOutInProcessLeavesRedisAvailable: a caller that gives up
// waiting in this process for a shared round trip (a group held busy here,
// as one tenant's flood keeps it) fails alone. Its own timer says nothing
// about Redis, which answers at once: the next decision goes to Redis,
// not refused as unavailable for a ProbeInterval, with or without the
// fair queue.
func TestCallerTimedOutInProcessLeavesRedisAvailable(t *testing.T) {
	for _, queue := range []bool{false, true} {
		t.Run(fmt.Sprintf("queue=%v", queue), func(t *testing.T) {
			const timeout = 100 * time.Millisecond
			srv := redistest.Start(t)
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
			t.Cleanup(func() { _ = rdb.Close() })
			cfg := RedisConfig{
				Limits:        []Limit{PerSecond(1000).WithBurst(10)},
				BoundaryKey:   redistest.BoundaryKey(),
				Prefix:        redistest.Prefix(t),
				Timeout:       timeout,
				OnUnavailable: FailClosed,
				ProbeInterval: time.Hour,
			}
			if queue {
				cfg.Queue = &FairQueue{MaxWait: time.Second}
			}
			l, err := NewRedis(rdb, cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := Request{Boundary: "b", Owner: "flooded"}
			waitRecovered(t, l, r)

			// Hold the caller's group busy, as a round trip in flight
			// would, with no driver: the caller waits here until its
			// timer fires.
			k := groupKey{boundary: r.Boundary}
			if l.ownerKeys != nil {
				k.owner = r.Owner
			}
			l.batch.mu.Lock()
			l.batch.groups[k] = &group{}
			l.batch.mu.Unlock()
			if _, err := l.Allow(context.Background(), r); !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("caller held in this process: %v; want ErrUnavailable from its own timer", err)
			}
			l.batch.mu.Lock()
			delete(l.batch.groups, k)
			l.batch.mu.Unlock()

			d, err := l.Allow(context.Background(), Request{Boundary: "b", Owner: "other"})
			if err != nil || !d.Allowed || d.Fallback {
				t.Fatalf("the next decision: %+v, %v; want Redis's grant", d, err)
			}
		})
	}
}
