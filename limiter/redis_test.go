package limiter

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrybudget/retrybudget/internal/redistest"
)

// Tests in this file run against real Redis, standalone and a local
// three-master cluster, because what they check (Lua atomicity, Redis TIME,
// slot routing) is what a fake would only pretend to have. Where the
// script's clock matters they wait in real time: Redis TIME cannot be
// faked, so they use short periods and margins wide enough for a loaded
// two-core machine.

// target is one kind of Redis deployment; newClient returns a fresh client
// (a separate connection pool, like another process) to the same data.
type target struct {
	name      string
	newClient func(t *testing.T) redis.UniversalClient
}

// targets returns a standalone Redis and a local cluster, each started once
// for the calling test.
func targets(t *testing.T) []target {
	t.Helper()
	std := redistest.Client(t)
	cluster := redistest.StartCluster(t)
	return []target{
		{"standalone", func(t *testing.T) redis.UniversalClient {
			o := std.Options()
			c := redis.NewClient(&redis.Options{Addr: o.Addr, Username: o.Username, Password: o.Password, DB: o.DB})
			t.Cleanup(func() { _ = c.Close() })
			return c
		}},
		{"cluster", func(t *testing.T) redis.UniversalClient { return cluster.Client(t) }},
	}
}

// newTestRedis returns a Redis limiter on rdb under a key prefix of the
// test's own.
func newTestRedis(t *testing.T, rdb redis.UniversalClient, prefix string, cfg RedisConfig) *Redis {
	t.Helper()
	cfg.Prefix = prefix
	if cfg.BoundaryKey == nil {
		cfg.BoundaryKey = redistest.BoundaryKey()
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Second // a loaded CI machine, not the failure path
	}
	l, err := NewRedis(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// roundTrips counts the round trips a client makes.
type roundTrips = redistest.RoundTrips

func allow(t *testing.T, l Limiter, r Request) Decision {
	t.Helper()
	d, err := l.Allow(context.Background(), r)
	if err != nil {
		t.Fatalf("Allow: %v", err)
	}
	return d
}

// within fails t unless lo <= d <= hi.
func within(t *testing.T, what string, d, lo, hi time.Duration) {
	t.Helper()
	if d < lo || d > hi {
		t.Fatalf("%s = %v, want within [%v, %v]", what, d, lo, hi)
	}
}

// clockScripts puts l and its scripts on a fake clock starting now, so
// that an answer is exact however long its round trip takes.
func clockScripts(l *Redis) *fakeClock {
	clk := newFakeClock(time.Now())
	l.now, l.scriptNow = clk.Now, clk.Now
	return clk
}

func TestRedis(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			t.Run("burst", func(t *testing.T) { testRedisBurst(t, tg) })
			t.Run("window edge", func(t *testing.T) { testRedisEdge(t, tg) })
			t.Run("window limit", func(t *testing.T) { testRedisWindow(t, tg) })
			t.Run("several limits are atomic", func(t *testing.T) { testRedisAtomic(t, tg) })
			t.Run("owner share", func(t *testing.T) { testRedisOwner(t, tg) })
			t.Run("cooldown pauses other clients", func(t *testing.T) { testRedisCooldown(t, tg) })
			t.Run("prefetch", func(t *testing.T) { testRedisPrefetch(t, tg) })
			t.Run("concurrent clients", func(t *testing.T) { testRedisConcurrent(t, tg) })
			t.Run("keys", func(t *testing.T) { testRedisKeys(t, tg) })
		})
	}
}

// testRedisBurst: an idle boundary allows exactly Burst requests at once,
// the next one is refused with the emission interval to wait. The script
// runs on a fake clock, so that the answer is exact however long the round
// trips take.
func testRedisBurst(t *testing.T, tg target) {
	l := newTestRedis(t, tg.newClient(t), redistest.Prefix(t), RedisConfig{
		Limits: []Limit{{Rate: 10, Burst: 3}},
	})
	clockScripts(l)
	r := Request{Boundary: "b"}
	for i := 0; i < 3; i++ {
		if d := allow(t, l, r); !d.Allowed {
			t.Fatalf("request %d refused: %+v", i, d)
		}
	}
	d := allow(t, l, r)
	if d.Allowed || d.Reason != ReasonRate {
		t.Fatalf("4th request: %+v, want refused by rate", d)
	}
	if d.RetryAfter != 100*time.Millisecond {
		t.Fatalf("4th request: RetryAfter %v, want the emission interval, 100ms", d.RetryAfter)
	}

	// Redis rate-limiting issue trackers are full of "Rate N allows 2N at
	// once"; with a long period there is no refill to blame.
	l2 := newTestRedis(t, tg.newClient(t), redistest.Prefix(t), RedisConfig{
		Limits: []Limit{{Rate: 5, Period: time.Hour, Burst: 5}},
	})
	n := 0
	for i := 0; i < 20; i++ {
		if allow(t, l2, r).Allowed {
			n++
		}
	}
	if n != 5 {
		t.Fatalf("allowed %d of 20 at once with Rate 5/h Burst 5, want exactly 5", n)
	}
}

// testRedisEdge: RetryAfter is exact: waiting a bit less is refused,
// waiting RetryAfter is enough. The script runs on a fake clock, so that a
// slow round trip cannot blur the edge.
func testRedisEdge(t *testing.T, tg target) {
	l := newTestRedis(t, tg.newClient(t), redistest.Prefix(t), RedisConfig{
		Limits: []Limit{PerSecond(5)}, // one per 200ms
	})
	clk := clockScripts(l)
	r := Request{Boundary: "b"}
	if d := allow(t, l, r); !d.Allowed {
		t.Fatalf("first request refused: %+v", d)
	}
	d := allow(t, l, r)
	if d.Allowed || d.RetryAfter != 200*time.Millisecond {
		t.Fatalf("second request at once: %+v, want refused for 200ms", d)
	}
	clk.Advance(d.RetryAfter - 40*time.Millisecond)
	d = allow(t, l, r)
	if d.Allowed || d.RetryAfter != 40*time.Millisecond {
		t.Fatalf("40ms before RetryAfter: %+v, want refused for 40ms", d)
	}
	clk.Advance(d.RetryAfter - time.Microsecond)
	if d := allow(t, l, r); d.Allowed || d.RetryAfter != time.Microsecond {
		t.Fatalf("1µs before RetryAfter: %+v, want refused for 1µs", d)
	}
	clk.Advance(time.Microsecond)
	if d := allow(t, l, r); !d.Allowed {
		t.Fatalf("refused after waiting RetryAfter: %+v", d)
	}
}

// testRedisWindow: Window(n, period, burst) never allows more than n in a
// window, whatever the arrival pattern.
func testRedisWindow(t *testing.T, tg target) {
	l := newTestRedis(t, tg.newClient(t), redistest.Prefix(t), RedisConfig{
		Limits: []Limit{Window(10, 400*time.Millisecond, 6)}, // Rate 5 per 400ms
	})
	r := Request{Boundary: "b"}
	var allowed []time.Time
	end := time.Now().Add(1200 * time.Millisecond)
	for time.Now().Before(end) {
		if allow(t, l, r).Allowed {
			allowed = append(allowed, time.Now())
		}
	}
	// The client's timestamps are taken after the reply, so a window of the
	// client's clock can hold one more than the server's; the server's own
	// decisions are what the script bounds, checked here with 10% slack on
	// the window for the reply's travel.
	for i := range allowed {
		n := 0
		for j := i; j < len(allowed) && allowed[j].Sub(allowed[i]) < 360*time.Millisecond; j++ {
			n++
		}
		if n > 10 {
			t.Fatalf("%d allowed within 360ms, want at most 10", n)
		}
	}
	// Up to 21 fit in 1.2s (burst 6, then one per 80ms); a loaded machine
	// loses some, but more than one window's 10 shows the refill.
	if len(allowed) <= 10 {
		t.Fatalf("allowed %d in 1.2s, want more than 10", len(allowed))
	}
}

// testRedisAtomic: with two limits, a refusal by one takes nothing from the
// other.
func testRedisAtomic(t *testing.T, tg target) {
	rdb := tg.newClient(t)
	prefix := redistest.Prefix(t)
	l := newTestRedis(t, rdb, prefix, RedisConfig{
		Limits: []Limit{{Rate: 1, Period: time.Hour, Burst: 2}, {Rate: 1, Period: time.Hour, Burst: 3}},
	})
	r := Request{Boundary: "b"}
	// keys: the boundary's cooldown, its scope's, then one per limit.
	keys, _ := l.decisionCall(r, 1)
	allow(t, l, r)
	allow(t, l, r)
	before := mget(t, rdb, keys[2:])
	d := allow(t, l, r)
	if d.Allowed || d.Reason != ReasonRate {
		t.Fatalf("3rd request: %+v, want refused by the burst-2 limit", d)
	}
	within(t, "RetryAfter", d.RetryAfter, 59*time.Minute, time.Hour)
	if after := mget(t, rdb, keys[2:]); !slices.Equal(before, after) {
		t.Fatalf("a refused request changed the state:\nbefore %v\nafter  %v", before, after)
	}
	if len(before) != 2 || slices.Contains(before, "") {
		t.Fatalf("state %v, want a TAT per limit", before)
	}
}

// mget returns the values of keys, "" for a missing one. Keys of one
// boundary share a slot, so this works on a cluster too.
func mget(t *testing.T, rdb redis.UniversalClient, keys []string) []string {
	t.Helper()
	vals, err := rdb.MGet(context.Background(), keys...).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i], _ = v.(string)
	}
	return out
}

// testRedisOwner: each owner gets at most its share; the boundary's limit
// still caps the sum.
func testRedisOwner(t *testing.T, tg target) {
	l := newTestRedis(t, tg.newClient(t), redistest.Prefix(t), RedisConfig{
		Limits:     []Limit{{Rate: 1, Period: time.Hour, Burst: 4}},
		OwnerShare: 0.5,
	})
	steps := []struct {
		owner  string
		want   bool
		reason Reason
	}{
		{"a", true, ""}, {"a", true, ""}, {"a", false, ReasonOwner},
		{"b", true, ""}, {"b", true, ""},
		{"c", false, ReasonRate},
		{"", false, ReasonRate},
	}
	for i, s := range steps {
		d := allow(t, l, Request{Boundary: "b", Owner: s.owner})
		if d.Allowed != s.want || d.Reason != s.reason {
			t.Fatalf("step %d owner %q: %+v, want allowed=%v reason=%q", i, s.owner, d, s.want, s.reason)
		}
		if !d.Allowed && d.RetryAfter < time.Minute {
			t.Fatalf("step %d: RetryAfter %v, want the hour-scale wait surfaced", i, d.RetryAfter)
		}
	}
}

// testRedisCooldown: one worker's Cooldown pauses the next decision of
// another worker with its own client, which resumes when the pause ends.
func testRedisCooldown(t *testing.T, tg target) {
	prefix := redistest.Prefix(t)
	cfg := RedisConfig{Limits: []Limit{PerSecond(1000)}}
	a := newTestRedis(t, tg.newClient(t), prefix, cfg)
	b := newTestRedis(t, tg.newClient(t), prefix, cfg)
	r := Request{Boundary: "shared"}
	if d := allow(t, b, r); !d.Allowed {
		t.Fatalf("before cooldown: %+v", d)
	}
	// The pause is long enough that a stalled machine is still inside it
	// for the checks below; the bounds use the time actually spent.
	const pause = time.Second
	start := time.Now()
	if err := a.Cooldown(context.Background(), "shared", start.Add(pause)); err != nil {
		t.Fatal(err)
	}
	// A shorter cooldown from someone else does not shorten the pause.
	if err := b.Cooldown(context.Background(), "shared", start.Add(10*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	// A third worker that has set no cooldown itself: only Redis can tell
	// it about the pause.
	c := newTestRedis(t, tg.newClient(t), prefix, cfg)
	d := allow(t, c, r)
	elapsed := time.Since(start)
	if d.Allowed || d.Reason != ReasonCooldown {
		t.Fatalf("after another worker's cooldown: %+v, want refused by cooldown", d)
	}
	within(t, "RetryAfter", d.RetryAfter, pause-elapsed-5*time.Millisecond, pause)
	// The pause crosses clocks twice (a's end as a length from its now,
	// c's as Redis's end read back from its now): each crossing is off by
	// at most the time its round trip took, which elapsed bounds.
	within(t, "CooldownUntil", d.CooldownUntil.Sub(start), pause-elapsed-5*time.Millisecond, pause+elapsed+5*time.Millisecond)
	if d := allow(t, c, Request{Boundary: "other"}); !d.Allowed {
		t.Fatalf("other boundary paused too: %+v", d)
	}
	// c remembers the pause and asks Redis no more until it ends.
	if d2 := allow(t, c, r); d2.CooldownUntil != d.CooldownUntil {
		t.Fatalf("second decision during the pause: %+v, want CooldownUntil %v", d2, d.CooldownUntil)
	}
	time.Sleep(time.Until(d.CooldownUntil))
	if d := allow(t, c, r); !d.Allowed {
		t.Fatalf("after the cooldown: %+v", d)
	}
}

// testRedisPrefetch: prefetching takes several tokens per round trip, never more
// than the limit has, and unused tokens expire.
func testRedisPrefetch(t *testing.T, tg target) {
	rdb := tg.newClient(t)
	var rt roundTrips
	rdb.AddHook(&rt)
	prefix := redistest.Prefix(t)

	l := newTestRedis(t, rdb, prefix, RedisConfig{Limits: []Limit{PerSecond(100_000).WithBurst(1000)}, Prefetch: 10, PrefetchTTL: time.Minute})
	r := Request{Boundary: "hot"}
	allow(t, l, r) // loads the script
	rt.N.Store(0)
	for i := 0; i < 100; i++ {
		if d := allow(t, l, r); !d.Allowed {
			t.Fatalf("request %d refused: %+v", i, d)
		}
	}
	if n := rt.N.Load(); n > 10 {
		t.Fatalf("%d round trips for 100 decisions with Prefetch 10, want at most 10", n)
	}

	// A prefetch never takes more than the limit has: 5 per hour, and two
	// processes prefetching 10 at a time get 5 between them.
	l1 := newTestRedis(t, rdb, prefix, RedisConfig{Limits: []Limit{{Rate: 5, Period: time.Hour, Burst: 5}}, Prefetch: 10, PrefetchTTL: time.Minute})
	l2 := newTestRedis(t, tg.newClient(t), prefix, RedisConfig{Limits: []Limit{{Rate: 5, Period: time.Hour, Burst: 5}}, Prefetch: 10, PrefetchTTL: time.Minute})
	n := 0
	for i := 0; i < 10; i++ {
		for _, l := range []*Redis{l1, l2} {
			if allow(t, l, Request{Boundary: "scarce"}).Allowed {
				n++
			}
		}
	}
	if n != 5 {
		t.Fatalf("allowed %d with prefetching on a 5/h limit, want exactly 5", n)
	}

	// Unused prefetched tokens expire after PrefetchTTL: the next decision goes
	// back to Redis.
	// The prefetch's time is the process's clock, faked here so that a slow
	// round trip cannot use up the TTL.
	l3 := newTestRedis(t, rdb, prefix, RedisConfig{Limits: []Limit{PerSecond(1000).WithBurst(100)}, Prefetch: 10, PrefetchTTL: 20 * time.Millisecond})
	clk := clockScripts(l3)
	allow(t, l3, Request{Boundary: "ttl"})
	rt.N.Store(0)
	allow(t, l3, Request{Boundary: "ttl"})
	if n := rt.N.Load(); n != 0 {
		t.Fatalf("%d round trips within the prefetch TTL, want 0", n)
	}
	clk.Advance(30 * time.Millisecond)
	allow(t, l3, Request{Boundary: "ttl"})
	if n := rt.N.Load(); n != 1 {
		t.Fatalf("%d round trips after the prefetch expired, want 1", n)
	}

	// This process's own cooldown drops its prefetched at once.
	if err := l3.Cooldown(context.Background(), "ttl", time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if d := allow(t, l3, Request{Boundary: "ttl"}); d.Allowed {
		t.Fatal("prefetched token spent during this process's cooldown")
	}
}

// testRedisConcurrent: many goroutines on two clients share one limit
// exactly.
func testRedisConcurrent(t *testing.T, tg target) {
	prefix := redistest.Prefix(t)
	cfg := RedisConfig{Limits: []Limit{{Rate: 1, Period: time.Hour, Burst: 100}}}
	ls := []*Redis{newTestRedis(t, tg.newClient(t), prefix, cfg), newTestRedis(t, tg.newClient(t), prefix, cfg)}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Go(func() {
			for i := 0; i < 40; i++ {
				d, err := ls[g%2].Allow(context.Background(), Request{Boundary: "b"})
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := allowed.Load(); n != 100 {
		t.Fatalf("allowed %d of 320, want exactly 100", n)
	}
}

// testRedisKeys: keys are hash-tagged, hold no raw boundary or owner, and
// expire.
func testRedisKeys(t *testing.T, tg target) {
	rdb := tg.newClient(t)
	prefix := redistest.Prefix(t)
	l := newTestRedis(t, rdb, prefix, RedisConfig{Limits: []Limit{PerSecond(10)}, OwnerShare: 0.5})
	boundary := "api.example.com#sk_live_secret"
	allow(t, l, Request{Boundary: boundary, Owner: "tenant-secret"})
	if err := l.Cooldown(context.Background(), boundary, time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	var keys []string
	scan := func(ctx context.Context, c *redis.Client) error {
		it := c.Scan(ctx, 0, prefix+"*", 100).Iterator()
		var mu sync.Mutex
		for it.Next(ctx) {
			mu.Lock()
			keys = append(keys, it.Val())
			mu.Unlock()
		}
		return it.Err()
	}
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		err = cc.ForEachMaster(context.Background(), func(ctx context.Context, c *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			return scan(ctx, c)
		})
	} else {
		err = scan(context.Background(), rdb.(*redis.Client))
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 3 {
		t.Fatalf("keys %v, want cooldown, rate and owner", keys)
	}
	tag := ""
	for _, k := range keys {
		if strings.Contains(k, "secret") {
			t.Fatalf("key %q holds a raw boundary or owner", k)
		}
		open, end := strings.Index(k, "{"), strings.Index(k, "}")
		if open < 0 || end < open+2 {
			t.Fatalf("key %q has no hash tag", k)
		}
		if tag == "" {
			tag = k[open : end+1]
		} else if k[open:end+1] != tag {
			t.Fatalf("key %q has another hash tag than %s", k, tag)
		}
		ttl, err := rdb.PTTL(context.Background(), k).Result()
		if err != nil || ttl <= 0 {
			t.Fatalf("key %q: PTTL %v, %v; want an expiry", k, ttl, err)
		}
	}
}

func TestRedisConfigErrors(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = rdb.Close() })
	key := redistest.BoundaryKey()
	bad := []RedisConfig{
		{BoundaryKey: key, Prefix: "a{b}"},
		{BoundaryKey: key, Limits: []Limit{{Rate: 0}}},
		{BoundaryKey: key, OwnerShare: 2},
		{BoundaryKey: key, FallbackShare: 1.5},
		{BoundaryKey: key, OnUnavailable: FailMode(7)},
		{BoundaryKey: key, Timeout: -1},
		{BoundaryKey: key, Prefetch: -1},
		{BoundaryKey: []byte("short")},
	}
	for _, cfg := range bad {
		if _, err := NewRedis(rdb, cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("NewRedis(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
	// Regression: a typed nil client panicked inside NewRedis.
	for _, c := range []redis.UniversalClient{nil, (*redis.Client)(nil), (*redis.ClusterClient)(nil), (*redis.Ring)(nil)} {
		if _, err := NewRedis(c, RedisConfig{}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("NewRedis(%T(nil)) = %v, want ErrInvalidConfig", c, err)
		}
	}
	if _, err := NewRedis(rdb, RedisConfig{BoundaryKey: key}); err != nil {
		t.Fatalf("zero config with a BoundaryKey: %v", err)
	}
}
