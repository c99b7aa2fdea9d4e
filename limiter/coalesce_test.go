package limiter

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrybudget/retrybudget/internal/redistest"
)

// newRealFakeClock returns a fake clock that starts at the real time, so
// that the expiry of keys, which Redis applies in real time, stays sane.
func newRealFakeClock() *fakeClock { return newFakeClock(time.Now().Truncate(time.Second)) }

// Sleep advances the clock by d, as if the caller had slept.
func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.Advance(d)
	return ctx.Err()
}

// newClockedRedis returns a batching Redis limiter whose script, decisions
// and waits all use clk.
func newClockedRedis(t *testing.T, clk *fakeClock, cfg RedisConfig) *Redis {
	t.Helper()
	l := newTestRedis(t, redistest.Client(t), redistest.Prefix(t), cfg)
	if l.batch == nil {
		t.Fatal("limiter does not batch")
	}
	l.now, l.scriptNow, l.batch.sleep = clk.Now, clk.Now, clk.Sleep
	return l
}

// batchOf runs one batch of n requests that may not wait.
func batchOf(t *testing.T, l *Redis, n int) []slotResult {
	t.Helper()
	outs, err := l.runBatch(context.Background(), groupKey{boundary: "b"}, make([]slotRequest, n))
	if err != nil {
		t.Fatal(err)
	}
	return outs
}

// TestBatchGCRAForNTokens: one script run decides n requests as n GCRA
// decisions in a row: it grants what the burst holds, and tells each
// refused request its own place, one interval after the one before.
func TestBatchGCRAForNTokens(t *testing.T) {
	clk := newRealFakeClock()
	l := newClockedRedis(t, clk, RedisConfig{Limits: []Limit{PerSecond(10).WithBurst(5)}})

	outs := batchOf(t, l, 8)
	for j, o := range outs {
		if j < 5 {
			if !o.granted || o.wait != 0 {
				t.Fatalf("request %d: %+v, want granted now", j, o)
			}
			continue
		}
		want := time.Duration(j-4) * 100 * time.Millisecond
		if o.granted || o.wait != want || o.reason != reasonRate {
			t.Fatalf("request %d: %+v, want refused with wait %v", j, o, want)
		}
	}

	// 250ms later two tokens have come back (at +100ms and +200ms); the
	// third is due at +300ms.
	clk.Advance(250 * time.Millisecond)
	outs = batchOf(t, l, 3)
	if !outs[0].granted || !outs[1].granted || outs[2].granted || outs[2].wait != 50*time.Millisecond {
		t.Fatalf("after 250ms: %+v, want two granted and one refused for 50ms", outs)
	}
}

// TestBatchTakesFromEveryLimit: with two limits the slot is the later of
// the two, and the place of a refused request follows the stricter one.
func TestBatchTakesFromEveryLimit(t *testing.T) {
	clk := newRealFakeClock()
	l := newClockedRedis(t, clk, RedisConfig{Limits: []Limit{PerSecond(10).WithBurst(5), {Rate: 2, Period: time.Second}}})
	outs := batchOf(t, l, 3)
	if !outs[0].granted {
		t.Fatalf("first request refused: %+v", outs[0])
	}
	if outs[1].granted || outs[1].wait != 500*time.Millisecond || outs[2].wait != time.Second {
		t.Fatalf("refused requests: %+v %+v, want places at 500ms and 1s (the 2/s limit)", outs[1], outs[2])
	}
}

// TestBatchBesideADeepBucket pins that a reply with a next token due in the
// past is a refusal, not a broken reply: a limit with a burst of a day's
// worth of tokens has, while another limit refuses, its next token due
// about a day ago, and refusing that reply as broken makes every refusal
// look like Redis failing. It is a refusal by the per-second limit, each
// request in its own place.
func TestBatchBesideADeepBucket(t *testing.T) {
	clk := newRealFakeClock()
	l := newClockedRedis(t, clk, RedisConfig{Limits: []Limit{PerSecond(10), Window(1000, 24*time.Hour, 1000)}})
	outs, err := l.runBatch(context.Background(), groupKey{boundary: "b"}, make([]slotRequest, 4))
	if err != nil {
		t.Fatal(err)
	}
	if !outs[0].granted {
		t.Fatalf("first request: %+v, want granted", outs[0])
	}
	for j, o := range outs[1:] {
		want := time.Duration(j+1) * 100 * time.Millisecond
		if o.granted || o.reason != reasonRate || o.wait != want {
			t.Fatalf("request %d: %+v, want refused by the 10/s limit for %v", j+1, o, want)
		}
	}
	d, err := l.Allow(context.Background(), Request{Boundary: "b"})
	if err != nil || d.Allowed || d.Fallback || d.Reason != ReasonRate {
		t.Fatalf("Allow: %+v %v, want refused by the rate limit, decided by Redis", d, err)
	}
}

// TestBatchDuringCooldown: a count decided while the boundary is paused
// refuses every request with the rest of the pause, not places one
// interval apart.
func TestBatchDuringCooldown(t *testing.T) {
	clk := newRealFakeClock()
	l := newClockedRedis(t, clk, RedisConfig{Limits: []Limit{PerSecond(10)}})
	// The pause is stored as 10s added to Redis TIME; the fake clock
	// stands at the real time the test started, truncated to the second,
	// so the rest of the pause it sees is 10s plus at most the real time
	// since then.
	if err := l.Cooldown(context.Background(), "b", clk.Now().Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	outs := batchOf(t, l, 3)
	most := 10*time.Second + time.Since(clk.Now())
	for j, o := range outs {
		if o.granted || o.reason != reasonCooldown || o.wait != outs[0].wait || o.wait < 10*time.Second || o.wait > most {
			t.Fatalf("request %d: %+v, want refused for the rest of the 10s pause like the others", j, o)
		}
	}
}

// gate is a go-redis hook that holds the first script run until released,
// so a test can line callers up behind a round trip in flight. It counts
// script runs.
type gate struct {
	scriptRuns
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func newGate() *gate { return &gate{entered: make(chan struct{}), release: make(chan struct{})} }

func (g *gate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "evalsha" || cmd.Name() == "eval" {
			g.n.Add(1)
			g.once.Do(func() {
				close(g.entered)
				<-g.release
			})
		}
		return next(ctx, cmd)
	}
}

// waiters returns the number of callers waiting behind the round trip in
// flight for boundary.
func (l *Redis) waiters(boundary string) int {
	return l.batch.coalescer.waitingIn(groupKey{boundary: boundary})
}

// lineUp starts n Allow calls on boundary "b" while the first is held in
// flight, waits until the other n-1 wait behind it, and releases it. It
// returns the decisions and errors, in no particular order.
func lineUp(t *testing.T, l *Redis, g *gate, n int, ctxOf func(i int) context.Context) ([]Decision, []error) {
	t.Helper()
	ds, errs := make([]Decision, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		if i == 1 {
			<-g.entered // the first is in flight
		}
		wg.Go(func() { ds[i], errs[i] = l.Allow(ctxOf(i), Request{Boundary: "b"}) })
	}
	for l.waiters("b") < n-1 {
		// Waiting for goroutines to queue up, not for time to pass.
		waitABit()
	}
	close(g.release)
	wg.Wait()
	return ds, errs
}

// TestCoalescedRoundTrips: 64 concurrent Allow calls on one boundary make
// two round trips (the first caller's, then one for the 63 that arrived
// while it was in flight), and grant exactly what the limit holds.
func TestCoalescedRoundTrips(t *testing.T) {
	rdb := redistest.Client(t)
	g := newGate()
	rdb.AddHook(g)
	l := newTestRedis(t, rdb, redistest.Prefix(t), RedisConfig{Limits: []Limit{PerMinute(1).WithBurst(10)}})
	// The script loaded, so the count is of decisions, not of the one
	// NOSCRIPT fallback it pays once: the lone first caller and then the
	// batch of the others both run decide.lua.
	if err := l.decide.Load(context.Background(), rdb).Err(); err != nil {
		t.Fatal(err)
	}
	ds, errs := lineUp(t, l, g, 64, func(int) context.Context { return context.Background() })
	allowed := 0
	waits := map[time.Duration]bool{}
	for i, d := range ds {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if d.Allowed {
			allowed++
			continue
		}
		waits[d.RetryAfter] = true
	}
	if allowed != 10 {
		t.Errorf("allowed %d of 64 on a burst of 10", allowed)
	}
	if len(waits) != 54 {
		t.Errorf("%d distinct RetryAfter among 54 refused, want each its own place", len(waits))
	}
	if n := g.n.Load(); n != 2 {
		t.Errorf("%d script runs for 64 concurrent decisions, want 2", n)
	}
}

// TestCoalescedCancelWhileWaiting: a caller whose context ends while it
// waits for a batch returns its context's error at once and takes nothing.
func TestCoalescedCancelWhileWaiting(t *testing.T) {
	rdb := redistest.Client(t)
	g := newGate()
	rdb.AddHook(g)
	l := newTestRedis(t, rdb, redistest.Prefix(t), RedisConfig{Limits: []Limit{PerMinute(1).WithBurst(3)}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	ds := make([]Decision, 2)
	wg.Go(func() { ds[0], _ = l.Allow(context.Background(), Request{Boundary: "b"}) })
	<-g.entered
	wg.Go(func() { ds[1], _ = l.Allow(context.Background(), Request{Boundary: "b"}) })
	gaveUp := make(chan error, 1)
	go func() {
		_, err := l.Allow(ctx, Request{Boundary: "b"})
		gaveUp <- err
	}()
	for l.waiters("b") < 2 {
		waitABit()
	}
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled caller: %v, want context.Canceled", err)
	}
	close(g.release)
	wg.Wait()
	if !ds[0].Allowed || !ds[1].Allowed {
		t.Fatalf("callers in line: %+v", ds)
	}
	if d := allow(t, l, Request{Boundary: "b"}); !d.Allowed {
		t.Fatalf("the third token was taken by the caller that gave up: %+v", d)
	}
	if d := allow(t, l, Request{Boundary: "b"}); d.Allowed {
		t.Fatalf("a fourth token on a burst of 3: %+v", d)
	}
}

// waitABit yields to other goroutines while a test waits for them to reach
// a state it can observe.
func waitABit() { runtime.Gosched() }

// ctxKey is the context key TestDrivenBatchCarriesItsOwnCallersValues
// marks callers with.
type ctxKey struct{}

// valueHook records, for every script run, the ctxKey value its context
// carries.
type valueHook struct {
	mu     sync.Mutex
	values []any
}

func (h *valueHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *valueHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *valueHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "evalsha" || cmd.Name() == "eval" {
			h.mu.Lock()
			h.values = append(h.values, ctx.Value(ctxKey{}))
			h.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

// TestDrivenBatchCarriesItsOwnCallersValues pins that a driven batch
// carries the context values of its own first caller, not of the first
// leader: otherwise a trace attaches later round trips to a caller long
// gone.
func TestDrivenBatchCarriesItsOwnCallersValues(t *testing.T) {
	rdb := redistest.Client(t)
	vh := &valueHook{}
	rdb.AddHook(vh)
	g := newGate()
	rdb.AddHook(g)
	l := newTestRedis(t, rdb, redistest.Prefix(t), RedisConfig{Limits: []Limit{PerMinute(1).WithBurst(10)}})
	if err := l.decide.Load(context.Background(), rdb).Err(); err != nil {
		t.Fatal(err)
	}
	_, errs := lineUp(t, l, g, 8, func(i int) context.Context {
		return context.WithValue(context.Background(), ctxKey{}, i)
	})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	vh.mu.Lock()
	defer vh.mu.Unlock()
	if len(vh.values) != 2 || vh.values[0] != 0 {
		t.Fatalf("script runs carried %v, want the leader's (0) and then a waiter's", vh.values)
	}
	if v, ok := vh.values[1].(int); !ok || v == 0 {
		t.Fatalf("the driven batch carried %v, want the value of one of its own callers (1..7)", vh.values[1])
	}
}
