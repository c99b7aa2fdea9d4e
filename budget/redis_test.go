package budget

import (
	"context"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrybudget/retrybudget/internal/keyedhash"
	"github.com/retrybudget/retrybudget/internal/redistest"
)

// testTimeout bounds round trips in tests that are not about timeouts: on
// a loaded machine under the race detector a round trip can exceed the
// 50ms default, and a fallback decision would fail them for nothing.
const testTimeout = 5 * time.Second

// testDestinationKey stands for a deployment's DestinationKey in tests.
var testDestinationKey = []byte("budget-test-destination-key-01")

// testKeyed names destinations as a budget under testDestinationKey does.
var testKeyed = func() keyedhash.Hasher {
	h, err := keyedhash.New(testDestinationKey)
	if err != nil {
		panic(err)
	}
	return h
}()

// newRedis is mustRedis with testTimeout unless cfg sets a Timeout.
func newRedis(t testing.TB, rdb redis.UniversalClient, cfg RedisConfig) *Redis {
	t.Helper()
	if cfg.Timeout == 0 {
		cfg.Timeout = testTimeout
	}
	return mustRedis(t, rdb, cfg)
}

// mustRedis is NewRedis, failing t on an error.
func mustRedis(t testing.TB, rdb redis.UniversalClient, cfg RedisConfig) *Redis {
	t.Helper()
	if cfg.DestinationKey == nil {
		cfg.DestinationKey = testDestinationKey
	}
	b, err := NewRedis(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// withdrawN withdraws n times and returns how many were allowed and the
// last decision. It fails t on a fallback decision: these tests are about
// Redis answering.
func withdrawN(t testing.TB, b Budget, dest string, n int) (int, Decision) {
	t.Helper()
	allowed := 0
	var d Decision
	for range n {
		d = b.Withdraw(context.Background(), dest)
		if d.Fallback {
			t.Fatalf("fallback decision %+v with Redis up", d)
		}
		if d.Allowed {
			allowed++
		}
	}
	return allowed, d
}

// deposit deposits n first attempts to dest.
func deposit(b Budget, dest string, n int) {
	for range n {
		b.Deposit(context.Background(), dest)
	}
}

// scanKeys returns the keys under prefix.
func scanKeys(t testing.TB, rdb redis.UniversalClient, prefix string) []string {
	t.Helper()
	var keys []string
	iter := rdb.Scan(context.Background(), 0, prefix+"*", 100).Iterator()
	for iter.Next(context.Background()) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return keys
}

// The script's rule and Local's decide alike, step by step, down to
// the float comparison at the boundary. Each case runs well inside one
// second, so a floor of 1/s refills no whole token during it and the
// outcome does not depend on timing.
func TestRedisMatchesLocalRule(t *testing.T) {
	rdb := redistest.Client(t)
	tests := []struct {
		name string
		rule Config
		ops  string // D<n>: n deposits; W<n>: n withdrawals
	}{
		{"default percent", Config{MinRetriesPerSec: -1}, "D100 W15"},
		{"percent and floor", Config{Percent: 0.5, MinRetriesPerSec: 1}, "D10 W3 D1 W10 D4 W3"},
		{"all retried", Config{Percent: 1, MinRetriesPerSec: -1}, "D5 W10"},
		{"floor alone", Config{Percent: -1, MinRetriesPerSec: 1}, "W5 D100 W5"},
		{"equality allows", Config{Percent: 0.25, MinRetriesPerSec: -1}, "D3 W1 D1 W2 D4 W2"},
		// 0.1*30 is 3.0000000000000004 and 0.3*10 too: both sides must
		// compare the same doubles.
		{"float boundary", Config{Percent: 0.1, MinRetriesPerSec: -1}, "D10 W2 D20 W5"},
		{"float boundary 0.3", Config{Percent: 0.3, MinRetriesPerSec: -1}, "D10 W5"},
		{"no deposits", Config{MinRetriesPerSec: -1}, "W3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shared := newRedis(t, rdb, RedisConfig{Config: tt.rule, Prefix: redistest.Prefix(t)})
			local := NewLocal(tt.rule)
			start := time.Now()
			for i, op := range strings.Fields(tt.ops) {
				n, err := strconv.Atoi(op[1:])
				if err != nil {
					t.Fatal(err)
				}
				if op[0] == 'D' {
					deposit(shared, "api", n)
					deposit(local, "api", n)
					continue
				}
				for j := range n {
					got := shared.Withdraw(context.Background(), "api")
					want := local.Withdraw(context.Background(), "api")
					if got != want {
						t.Fatalf("op %d (%s), withdrawal %d: Redis %+v, local %+v", i, op, j, got, want)
					}
				}
			}
			if took := time.Since(start); took > 900*time.Millisecond {
				t.Logf("case took %v: a floor token may have refilled", took)
			}
		})
	}
}

// The default rule: 10% of first attempts plus the floor's one second of
// 10 tokens, refilled at 10 per second.
func TestRedisPercentPlusFloor(t *testing.T) {
	b := newRedis(t, redistest.Client(t), RedisConfig{Prefix: redistest.Prefix(t)})
	deposit(b, "api", 100) // pending: sent with the first withdrawal
	start := time.Now()
	got, _ := withdrawN(t, b, "api", 50)
	refill := int(math.Ceil(time.Since(start).Seconds() * 10))
	if got < 20 || got > 20+refill {
		t.Fatalf("%d retries allowed; want 20 (10%% of 100 + floor of 10), or up to %d more refilled", got, refill)
	}
	d := b.Withdraw(context.Background(), "api")
	if d.Allowed && got+1 > 20+refill {
		t.Fatalf("decision %+v after the budget was spent", d)
	}
	if d.Deposits != 100 || d.Retries < 20 {
		t.Fatalf("decision %+v; want 100 deposits and at least 20 retries", d)
	}
}

// The floor refills at MinRetriesPerSec and holds one second's worth.
func TestRedisFloorRefills(t *testing.T) {
	b := newRedis(t, redistest.Client(t), RedisConfig{
		Config: Config{Percent: -1, MinRetriesPerSec: 10},
		Prefix: redistest.Prefix(t),
	})
	burst := func() int {
		t.Helper()
		start := time.Now()
		n := 0
		for b.Withdraw(context.Background(), "api").Allowed {
			if n++; n > 100 {
				t.Fatal("the floor never ran out")
			}
		}
		if refill := int(math.Ceil(time.Since(start).Seconds() * 10)); n < 10 || n > 10+refill {
			t.Fatalf("%d retries in a burst; want the floor's 10 (+%d refilled)", n, refill)
		}
		return n
	}
	burst()

	// One token comes back after 100ms; poll for it.
	empty := time.Now()
	for !b.Withdraw(context.Background(), "api").Allowed {
		if time.Since(empty) > time.Second {
			t.Fatal("no token refilled within 1s at 10/s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if took := time.Since(empty); took > 150*time.Millisecond+faultSlack {
		t.Fatalf("a token took %v to refill at 10/s", took)
	}

	// Waiting twice the refill time still gives one second's worth: the
	// bucket is capped. The wait in real time is the point here.
	time.Sleep(2 * time.Second)
	burst()
}

// Deposits leave the window a window after they were counted, retries
// too, and an unused destination's key expires on its own two windows
// after its last use.
func TestRedisWindowExpires(t *testing.T) {
	rdb := redistest.Client(t)
	cfg := RedisConfig{Config: Config{Percent: 0.5, MinRetriesPerSec: -1, Window: time.Second}}

	t.Run("slides", func(t *testing.T) {
		cfg.Prefix = redistest.Prefix(t)
		b := newRedis(t, rdb, cfg)
		deposit(b, "api", 10)
		start := time.Now()
		if got, d := withdrawN(t, b, "api", 6); got != 5 || d.Deposits != 10 || d.Retries != 5 {
			t.Fatalf("%d allowed, %+v; want 5 on 10 deposits", got, d)
		}
		// A refused withdrawal writes nothing, so polling does not
		// keep anything alive.
		for {
			d := b.Withdraw(context.Background(), "api")
			if d.Deposits == 0 && d.Retries == 0 && !d.Allowed {
				break
			}
			if time.Since(start) > 3*time.Second {
				t.Fatalf("decision %+v 3s into a 1s window", d)
			}
			time.Sleep(20 * time.Millisecond)
		}
		// The window is ten slots of 100ms: counts leave between 0.9s
		// and 1s after they were made.
		if took := time.Since(start); took < 850*time.Millisecond || took > time.Second+faultSlack+100*time.Millisecond {
			t.Fatalf("counts left the window after %v; want about 0.9s to 1s", took)
		}
		// Pruning left nothing to keep: the hash is gone.
		if n := len(scanKeys(t, rdb, cfg.Prefix)); n != 0 {
			t.Fatalf("%d keys after the window emptied; want 0", n)
		}
	})

	t.Run("key expires", func(t *testing.T) {
		cfg.Prefix = redistest.Prefix(t)
		b := newRedis(t, rdb, cfg)
		deposit(b, "api", 10)
		withdrawN(t, b, "api", 1)
		keys := scanKeys(t, rdb, cfg.Prefix)
		if len(keys) != 1 {
			t.Fatalf("keys %q; want one per destination", keys)
		}
		ttl, err := rdb.PTTL(context.Background(), keys[0]).Result()
		if err != nil || ttl <= time.Second || ttl > 2*time.Second {
			t.Fatalf("PTTL %v, %v; want about two windows (2s)", ttl, err)
		}
		deadline := time.Now().Add(3 * time.Second)
		for rdb.Exists(context.Background(), keys[0]).Val() != 0 {
			if time.Now().After(deadline) {
				t.Fatal("key still there 3s after its last use, with a 2s TTL")
			}
			time.Sleep(50 * time.Millisecond)
		}
	})

	t.Run("hash stays small", func(t *testing.T) {
		cfg.Prefix = redistest.Prefix(t)
		cfg.Config.MinRetriesPerSec = 100
		b := newRedis(t, rdb, cfg)
		end := time.Now().Add(1500 * time.Millisecond)
		for time.Now().Before(end) {
			deposit(b, "api", 3)
			withdrawN(t, b, "api", 2)
			time.Sleep(10 * time.Millisecond)
		}
		keys := scanKeys(t, rdb, cfg.Prefix)
		if len(keys) != 1 {
			t.Fatalf("keys %q; want one", keys)
		}
		fields, err := rdb.HKeys(context.Background(), keys[0]).Result()
		if err != nil {
			t.Fatal(err)
		}
		// Ten slots of deposits and of retries, plus the floor's two.
		if len(fields) > 2*windowSlots+2 {
			t.Fatalf("hash holds %d fields after 1.5 windows: %q", len(fields), fields)
		}
		shape := regexp.MustCompile(`^([dr]:\d+|ft|fa)$`)
		for _, f := range fields {
			if !shape.MatchString(f) {
				t.Fatalf("unexpected field %q", f)
			}
		}
	})
}

// Every destination has one key of its own, named by a hash: deposits to
// one fund only its retries, and nothing of the destination shows in Redis.
func TestRedisPerDestination(t *testing.T) {
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t)
	b := newRedis(t, rdb, RedisConfig{Config: Config{MinRetriesPerSec: -1}, Prefix: prefix})
	const secret = "api.example.com#sk_live_s3cret{tag}"
	deposit(b, secret, 10)
	if got, _ := withdrawN(t, b, secret, 1); got != 1 {
		t.Fatal("10 deposits did not fund one retry")
	}
	if got, _ := withdrawN(t, b, "other", 1); got != 0 {
		t.Fatal("deposits to one destination funded another's retry")
	}
	keys := scanKeys(t, rdb, prefix)
	if len(keys) != 1 { // "other" wrote nothing
		t.Fatalf("keys %q; want one", keys)
	}
	want := destKey(testKeyed, rulePrefix(prefix, DefaultWindow), secret)
	if keys[0] != want || strings.Contains(keys[0], "s3cret") {
		t.Fatalf("key %q; want %q, without the destination", keys[0], want)
	}
}

// Two budgets on one Redis and prefix, as two processes, share one
// window and one floor.
func TestRedisSharedAcrossProcesses(t *testing.T) {
	rdb := redistest.Client(t)
	cfg := RedisConfig{Config: Config{MinRetriesPerSec: -1}, Prefix: redistest.Prefix(t)}
	a, b := newRedis(t, rdb, cfg), newRedis(t, rdb, cfg)
	deposit(a, "api", 100)
	withdrawN(t, a, "api", 4) // sends a's deposits
	got, d := withdrawN(t, b, "api", 10)
	if got != 6 || d.Deposits != 100 || d.Retries != 10 {
		t.Fatalf("b: %d allowed, %+v; want the 6 left of 10%% of a's 100", got, d)
	}

	cfg = RedisConfig{Config: Config{Percent: -1, MinRetriesPerSec: 10}, Prefix: redistest.Prefix(t)}
	a, b = newRedis(t, rdb, cfg), newRedis(t, rdb, cfg)
	start := time.Now()
	ga, _ := withdrawN(t, a, "api", 5)
	gb, _ := withdrawN(t, b, "api", 20)
	refill := int(math.Ceil(time.Since(start).Seconds() * 10))
	if ga != 5 || gb < 5 || gb > 5+refill {
		t.Fatalf("floor: a %d, b %d; want 5 and the 5 left (+%d refilled)", ga, gb, refill)
	}
}

// Deposits are sent with the next withdrawal, or by the first deposit a
// flush interval after the last round trip; deposits older than a window
// are dropped rather than credited late.
func TestRedisDepositBatching(t *testing.T) {
	rdb := redistest.Client(t)
	cfg := RedisConfig{
		Config:        Config{Percent: 1, MinRetriesPerSec: -1, Window: 10 * time.Second},
		Prefix:        redistest.Prefix(t),
		FlushInterval: time.Second,
	}
	a, b := newRedis(t, rdb, cfg), newRedis(t, rdb, cfg)
	now := t0
	a.now = func() time.Time { return now }
	deposits := func() int64 {
		t.Helper()
		_, d := withdrawN(t, b, "api", 1)
		return d.Deposits
	}

	deposit(a, "api", 5)
	if got := deposits(); got != 0 {
		t.Fatalf("b sees %d deposits before a's flush interval; want 0", got)
	}
	now = now.Add(999 * time.Millisecond)
	deposit(a, "api", 1)
	if got := deposits(); got != 0 {
		t.Fatalf("b sees %d deposits 999ms in; want 0", got)
	}
	now = now.Add(time.Millisecond)
	deposit(a, "api", 1) // a second after a's first: sends all 7
	if got := deposits(); got != 7 {
		t.Fatalf("b sees %d deposits after a's flush; want 7", got)
	}

	deposit(a, "api", 3) // pending...
	now = now.Add(11 * time.Second)
	deposit(a, "api", 1) // ...for longer than a window: dropped
	if got := deposits(); got != 8 {
		t.Fatalf("b sees %d deposits; want 8 (the 3 stale ones dropped)", got)
	}

	deposit(a, "api", 2)
	withdrawN(t, a, "api", 1) // a withdrawal sends them at once
	if got := deposits(); got != 10 {
		t.Fatalf("b sees %d deposits after a's withdrawal; want 10", got)
	}
}

// Racing deposits lose and duplicate none: each is sent exactly once.
func TestRedisConcurrentDeposits(t *testing.T) {
	rdb := redistest.Client(t)
	b := newRedis(t, rdb, RedisConfig{Prefix: redistest.Prefix(t), FlushInterval: -1})
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() { deposit(b, "api", 20) })
	}
	wg.Wait()
	if _, d := withdrawN(t, b, "api", 1); d.Deposits != 1000 {
		t.Fatalf("%d deposits counted; want exactly 1000", d.Deposits)
	}
}

// Fifty goroutines over five budgets (five processes) withdrawing at once
// get exactly the budget: the check and the spend are one script.
func TestRedisConcurrentWithdrawalsNeverOvershoot(t *testing.T) {
	rdb := redistest.Client(t)
	cfg := RedisConfig{Config: Config{MinRetriesPerSec: -1}, Prefix: redistest.Prefix(t)}
	var fleet [5]*Redis
	for i := range fleet {
		fleet[i] = newRedis(t, rdb, cfg)
	}
	deposit(fleet[0], "api", 1000)
	first, _ := withdrawN(t, fleet[0], "api", 1) // sends the deposits
	var allowed atomic.Int64
	allowed.Add(int64(first))
	var wg sync.WaitGroup
	for g := range 50 {
		wg.Go(func() {
			n, _ := withdrawN(t, fleet[g%len(fleet)], "api", 20)
			allowed.Add(int64(n))
		})
	}
	wg.Wait()
	if got := allowed.Load(); got != 100 {
		t.Fatalf("%d retries allowed across 50 goroutines; want exactly 100", got)
	}
	if _, d := withdrawN(t, fleet[3], "api", 1); d.Allowed || d.Deposits != 1000 || d.Retries != 100 {
		t.Fatalf("final decision %+v; want refused at 1000 deposits, 100 retries", d)
	}
}

// A fresh server has no script cached: the first decision falls back from
// EVALSHA to EVAL, and a SCRIPT FLUSH later is survived the same way.
func TestRedisScriptCacheFlushed(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	b := newRedis(t, rdb, RedisConfig{Config: Config{MinRetriesPerSec: -1}, Prefix: redistest.Prefix(t)})
	deposit(b, "api", 20)
	if got, _ := withdrawN(t, b, "api", 1); got != 1 {
		t.Fatal("first decision on a fresh server refused")
	}
	if err := rdb.ScriptFlush(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	if got, d := withdrawN(t, b, "api", 1); got != 1 || d.Retries != 2 {
		t.Fatalf("after SCRIPT FLUSH: %+v", d)
	}
}

// Regression: Withdraw credited every pending deposit, however old, so a
// burst of first attempts that all hung past the window funded its own
// retries when they came. Deposit already dropped such deposits.
func TestRedisWithdrawDropsStaleDeposits(t *testing.T) {
	rdb := redistest.Client(t)
	b := newRedis(t, rdb, RedisConfig{
		Config:        Config{Percent: 1, MinRetriesPerSec: -1, Window: 10 * time.Second},
		Prefix:        redistest.Prefix(t),
		FlushInterval: time.Second,
	})
	now := t0
	b.now = func() time.Time { return now }
	deposit(b, "api", 3)
	now = now.Add(time.Hour)
	if d := b.Withdraw(context.Background(), "api"); d.Allowed || d.Deposits != 0 || d.Fallback {
		t.Fatalf("withdraw an hour after the deposits: %+v; want refused with no deposits", d)
	}
}

// Regression: processes with different windows shared one key, and each
// read the other's slots as future or stale ones (counts that never left
// the window, or were wiped).
func TestRedisDifferentWindowsCountApart(t *testing.T) {
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t)
	narrow := newRedis(t, rdb, RedisConfig{Config: Config{Percent: 1, MinRetriesPerSec: -1, Window: time.Second}, Prefix: prefix, FlushInterval: -1})
	wide := newRedis(t, rdb, RedisConfig{Config: Config{Percent: 1, MinRetriesPerSec: -1, Window: 2 * time.Second}, Prefix: prefix, FlushInterval: -1})
	deposit(narrow, "api", 5)
	if _, d := withdrawN(t, wide, "api", 1); d.Deposits != 0 {
		t.Fatalf("a 2s-window budget sees %d deposits of a 1s-window one; want 0", d.Deposits)
	}
	if _, d := withdrawN(t, narrow, "api", 1); d.Deposits != 5 {
		t.Fatalf("the 1s-window budget sees %d deposits; want its own 5", d.Deposits)
	}
}
