package limiter

import (
	"context"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/redistest"
)

func TestScopeOfBoundary(t *testing.T) {
	for _, c := range []struct{ boundary, scope string }{
		{Within("api.github.com#ab12", "core"), "api.github.com#ab12"},
		{"api.github.com#ab12", "api.github.com#ab12"},
		{Within(Within("a", "b"), "c"), "a"},
		{Within("", "core"), ""},
		{"", ""},
	} {
		if got := Scope(c.boundary); got != c.scope {
			t.Errorf("Scope(%q) = %q, want %q", c.boundary, got, c.scope)
		}
	}
}

// TestLocalScopeCooldown: a cooldown of a scope pauses every boundary
// within it and the scope itself, and no other; a cooldown of one
// boundary within the scope pauses that boundary alone. The later of the
// two pauses decides.
func TestLocalScopeCooldown(t *testing.T) {
	clock := newFakeClock(t0)
	l := mustLocal(t, LocalConfig{Limits: []Limit{PerSecond(100)}, MaxCooldown: time.Minute}, clock.Now)
	ctx := context.Background()
	core, search := Within("cred", "core"), Within("cred", "search")
	if d, _ := l.Allow(ctx, Request{Boundary: core}); !d.Allowed {
		t.Fatalf("before any pause: %+v", d)
	}
	if n := l.len(); n != 1 {
		t.Fatalf("%d entries after one scoped decision, want 1: a scope gets none until paused", n)
	}

	if err := l.Cooldown(ctx, "cred", t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{core, search, "cred"} {
		d, _ := l.Allow(ctx, Request{Boundary: b})
		if d.Allowed || d.Reason != ReasonCooldown || !d.CooldownUntil.Equal(t0.Add(2*time.Second)) {
			t.Fatalf("%s during the scope's pause: %+v", b, d)
		}
	}
	if d, _ := l.Allow(ctx, Request{Boundary: Within("other", "core")}); !d.Allowed {
		t.Fatalf("another scope paused too: %+v", d)
	}

	// The boundary's own pause ends later: it decides.
	if err := l.Cooldown(ctx, core, t0.Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if d, _ := l.Allow(ctx, Request{Boundary: core}); !d.CooldownUntil.Equal(t0.Add(5 * time.Second)) {
		t.Fatalf("core under both pauses: %+v, want the later end", d)
	}
	clock.Advance(2 * time.Second)
	if d, _ := l.Allow(ctx, Request{Boundary: search}); !d.Allowed {
		t.Fatalf("search after the scope's pause: %+v", d)
	}
	if d, _ := l.Allow(ctx, Request{Boundary: core}); d.Allowed {
		t.Fatalf("core during its own pause: %+v", d)
	}
}

// TestRedisScopeCooldown runs the scope rules against real Redis,
// standalone and cluster (every key a scoped decision reads must share
// the scope's slot), for each way a decision is made: coalesced, one
// round trip per decision, prefetched, and the fair queue.
func TestRedisScopeCooldown(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			for _, m := range []struct {
				name string
				cfg  RedisConfig
			}{
				{"coalesced", RedisConfig{}},
				{"one per round trip", RedisConfig{MaxBatch: 1}},
				{"prefetch", RedisConfig{Prefetch: 10}},
				{"fair queue", RedisConfig{Queue: &FairQueue{}}},
			} {
				t.Run(m.name, func(t *testing.T) { testRedisScopeCooldown(t, tg, m.cfg) })
			}
		})
	}
}

// testRedisScopeCooldown: process a pauses a scope; process b, which set
// nothing itself, is refused for it on a boundary within the scope in the
// same script run (one round trip), then on another boundary of the scope
// with no round trip at all, and keeps sending to another scope and to a
// boundary of a scope whose other boundary alone was paused.
func testRedisScopeCooldown(t *testing.T, tg target, cfg RedisConfig) {
	prefix := redistest.Prefix(t)
	cfg.Limits = []Limit{{Rate: 1000, Period: time.Second, Burst: 100}}
	a := newTestRedis(t, tg.newClient(t), prefix, cfg)
	rdb := tg.newClient(t)
	var trips roundTrips
	rdb.AddHook(&trips)
	b := newTestRedis(t, rdb, prefix, cfg)
	graphql, search := Within("cred", "graphql"), Within("cred", "search")
	for _, r := range []Request{{Boundary: graphql, Owner: "A"}, {Boundary: Within("cred2", "core"), Owner: "A"}} {
		if d := allow(t, b, r); !d.Allowed {
			t.Fatalf("%s before any pause: %+v", r.Boundary, d)
		}
	}
	if b.prefetched != nil {
		// Spend b's prefetched tokens of graphql: a pause set elsewhere
		// reaches a prefetching process once they are gone.
		b.prefetched.drop(graphql)
	}

	const pause = 30 * time.Second
	start := time.Now()
	if err := a.Cooldown(context.Background(), "cred", start.Add(pause)); err != nil {
		t.Fatal(err)
	}
	if err := a.Cooldown(context.Background(), Within("cred2", "search"), start.Add(pause)); err != nil {
		t.Fatal(err)
	}

	before := trips.N.Load()
	d := allow(t, b, Request{Boundary: graphql, Owner: "A"})
	if d.Allowed || d.Reason != ReasonCooldown {
		t.Fatalf("graphql after another process paused its scope: %+v", d)
	}
	within(t, "CooldownUntil", d.CooldownUntil.Sub(start), pause-time.Second, pause+time.Second)
	if n := trips.N.Load() - before; n != 1 {
		t.Fatalf("graphql decision took %d round trips, want 1", n)
	}
	before = trips.N.Load()
	if d := allow(t, b, Request{Boundary: search, Owner: "A"}); d.Allowed || d.Reason != ReasonCooldown {
		t.Fatalf("search during its scope's pause: %+v", d)
	}
	if n := trips.N.Load() - before; n != 0 {
		t.Fatalf("search decision took %d round trips, want 0: the scope's pause is remembered", n)
	}
	for _, bd := range []string{Within("other", "graphql"), Within("cred2", "core")} {
		if d := allow(t, b, Request{Boundary: bd, Owner: "A"}); !d.Allowed {
			t.Fatalf("%s paused too: %+v", bd, d)
		}
	}
}

// TestRedisScopeCooldownDropsPrefetch: a cooldown of a scope set by this
// process drops the tokens it prefetched for every boundary within it.
func TestRedisScopeCooldownDropsPrefetch(t *testing.T) {
	l := newTestRedis(t, redistest.Client(t), redistest.Prefix(t), RedisConfig{Limits: []Limit{{Rate: 1000, Period: time.Second, Burst: 100}}, Prefetch: 10, PrefetchTTL: time.Minute})
	core, other := Within("cred", "core"), Within("other", "core")
	for _, bd := range []string{core, other} {
		if d := allow(t, l, Request{Boundary: bd}); !d.Allowed {
			t.Fatalf("%s: %+v", bd, d)
		}
	}
	if err := l.Cooldown(context.Background(), "cred", time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if d := allow(t, l, Request{Boundary: core}); d.Allowed || d.Reason != ReasonCooldown {
		t.Fatalf("core during its scope's pause: %+v", d)
	}
	now := time.Now()
	if l.prefetched.take(prefetchKey{boundary: core}, now) {
		t.Fatal("a prefetched token of core outlived its scope's cooldown")
	}
	if !l.prefetched.take(prefetchKey{boundary: other}, now) {
		t.Fatal("another scope's prefetched tokens were dropped")
	}
}
