package limiter

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrybudget/retrybudget/internal/redistest"
)

// scriptMicros returns the Redis CPU µs per EVALSHA since the last
// CONFIG RESETSTAT, from INFO commandstats: what the script costs Redis,
// however long the round trip took.
func scriptMicros(t *testing.T, rdb *redis.Client) float64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:")
		if !ok {
			continue
		}
		for field := range strings.SplitSeq(rest, ",") {
			if v, ok := strings.CutPrefix(field, "usec_per_call="); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatal(err)
				}
				return f
			}
		}
	}
	t.Fatalf("no evalsha in %q", info)
	return 0
}

// queueDecisionMicros fills a boundary of the fair queue with tenants
// owners, each holding a slot, and returns the Redis µs per decision of
// further owners asking one at a time.
func queueDecisionMicros(t *testing.T, rdb *redis.Client, tenants int) float64 {
	t.Helper()
	clk := newRealFakeClock()
	// 20,000 slots a second: every owner's slot within the wait.
	l := newTestRedis(t, rdb, redistest.Prefix(t), RedisConfig{Limits: []Limit{PerSecond(20_000)}, Queue: &FairQueue{MaxWait: time.Minute}})
	l.now, l.scriptNow = clk.Now, clk.Now
	req := func(owner string) slotRequest {
		return slotRequest{maxWait: time.Minute, owner: l.keys.owner(owner), weight: 1}
	}
	k := groupKey{boundary: "b"}
	for i := 0; i < tenants; i += 100 {
		ins := make([]slotRequest, 0, 100)
		for j := i; j < min(i+100, tenants); j++ {
			ins = append(ins, req(fmt.Sprint("tenant", j)))
		}
		if _, err := l.runBatch(context.Background(), k, ins); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.ConfigResetStat(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	const decisions = 200
	for i := range decisions {
		outs, err := l.runBatch(context.Background(), k, []slotRequest{req(fmt.Sprint("asker", i))})
		if err != nil {
			t.Fatal(err)
		}
		if !outs[0].granted {
			t.Fatalf("asker %d refused: %+v", i, outs[0])
		}
	}
	return scriptMicros(t, rdb)
}

// TestFairQueueCostDoesNotGrowWithTenants: a fair-queue decision touches
// the owners of its batch, not every owner holding a slot, so its Redis
// time at 9,000 tenants stays near its time at 100.
func TestFairQueueCostDoesNotGrowWithTenants(t *testing.T) {
	rdb := redistest.Start(t).Client(t) // private: the test resets its stats
	// The least of three interleaved rounds each: a loaded machine only
	// ever adds time to a script run (Redis descheduled in the middle of
	// it), so the least is the script's own cost.
	few, many := math.Inf(1), math.Inf(1)
	for range 3 {
		few = min(few, queueDecisionMicros(t, rdb, 100))
		many = min(many, queueDecisionMicros(t, rdb, 9000))
	}
	t.Logf("Redis µs per decision: %.1f at 100 tenants, %.1f at 9,000", few, many)
	if many > 200 || many > 4*few+20 {
		t.Fatalf("Redis µs per decision: %.1f at 9,000 tenants against %.1f at 100; want at most 200 and no growth", many, few)
	}
}

// TestFairQueueForgetsOwnersThatStoppedAsking: owners whose slots are all
// out of the lookahead leave the queue's keys up to 17 (n+16) per decision
// that adds an owner, and per decision on a saturated boundary, however
// many there are; an owner the queue knows, sent now, leaves them be, and
// the queue does not grow.
func TestFairQueueForgetsOwnersThatStoppedAsking(t *testing.T) {
	const owners = 1000
	for _, tc := range []struct {
		name string
		// ask makes decision i after the owners stopped asking.
		ask func(i int) []slotRequest
		// forgets: whether the stopped owners leave; else the queue keeps
		// its size.
		forgets bool
	}{
		{"new owner each decision", func(i int) []slotRequest { return []slotRequest{ownerRequest(fmt.Sprint("new", i))} }, true},
		// Two requests and one token a decision: saturated.
		{"saturated by one owner", func(int) []slotRequest { return []slotRequest{ownerRequest("A"), ownerRequest("A")} }, true},
		{"one known owner sent now", func(int) []slotRequest { return []slotRequest{ownerRequest("A")} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdb := redistest.Client(t)
			clk := newRealFakeClock()
			l := newTestRedis(t, rdb, redistest.Prefix(t), RedisConfig{Limits: []Limit{PerSecond(100)}, Queue: &FairQueue{MaxWait: time.Minute}})
			l.now, l.scriptNow = clk.Now, clk.Now
			k := groupKey{boundary: "b"}
			run := func(ins []slotRequest) {
				t.Helper()
				for i := range ins {
					ins[i].owner = l.keys.owner(ins[i].owner)
				}
				if _, err := l.runBatch(context.Background(), k, ins); err != nil {
					t.Fatal(err)
				}
			}
			run(tc.ask(-1)[:1]) // the owner A is known before the others stop
			gone := make(map[string]bool, owners)
			for i := 0; i < owners; i += 100 {
				ins := make([]slotRequest, 0, 100)
				for j := i; j < i+100; j++ {
					ins = append(ins, ownerRequest(fmt.Sprint("gone", j)))
					gone[l.keys.owner(fmt.Sprint("gone", j))] = true
				}
				run(ins)
			}
			base := l.cache.get("b", l.buildKeys).base
			sizes := func() (int64, int64) {
				return rdb.HLen(context.Background(), base+queueSlotsSuffix).Val(), rdb.ZCard(context.Background(), base+queueLatestSuffix).Val()
			}
			// Every owner has a latest slot; all but the first, sent now,
			// hold one ahead and so a field of slots.
			if h, z := sizes(); h != owners || z != owners+1 {
				t.Fatalf("after %d owners asked: %d fields, %d members; want %d, %d", owners+1, h, z, owners, owners+1)
			}
			// Every slot is 10s ahead at most; past it, the others stopped.
			clk.Advance(11 * time.Second)
			for i := 0; i < owners/17+1; i++ {
				run(tc.ask(i))
				clk.Advance(10 * time.Millisecond)
			}
			h, z := sizes()
			members, err := rdb.ZRange(context.Background(), base+queueLatestSuffix, 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			left := 0
			for _, m := range members {
				if gone[m] {
					left++
				}
			}
			if tc.forgets && (left != 0 || h > z) {
				t.Fatalf("%d owners that stopped asking left, %d fields, %d members after %d decisions", left, h, z, owners/17+1)
			}
			if !tc.forgets && z != owners+1 {
				t.Fatalf("%d members after %d decisions of a known owner; want %d", z, owners/17+1, owners+1)
			}
		})
	}
}

// ownerRequest is a request of owner (not yet keyed) that may wait a
// minute for a slot of its own.
func ownerRequest(owner string) slotRequest {
	return slotRequest{maxWait: time.Minute, owner: owner, weight: 1}
}

// TestFairQueueSlotsNeverOutliveTheirOwners: with OwnerShare, an owner's
// share limit may run far ahead of the boundary's; the hash of slots
// ahead, written with it, must still expire no later than the sorted set
// of owners, which a later decision of another owner sets from the
// boundary's limit, or its fields would outlive the entries that forget
// removes them with.
func TestFairQueueSlotsNeverOutliveTheirOwners(t *testing.T) {
	rdb := redistest.Client(t)
	l := newTestRedis(t, rdb, redistest.Prefix(t), RedisConfig{
		Limits:     []Limit{PerSecond(100).WithBurst(100)},
		OwnerShare: 0.5,
		Queue:      &FairQueue{MaxWait: time.Minute},
	})
	ctx := context.Background()
	batch := func(owner string, n int) {
		t.Helper()
		ins := make([]slotRequest, n)
		for i := range ins {
			ins[i] = slotRequest{maxWait: time.Minute, owner: l.keys.owner(owner), weight: n}
		}
		if _, err := l.runBatch(ctx, groupKey{boundary: "b", owner: owner}, ins); err != nil {
			t.Fatal(err)
		}
	}
	// B's share (50/s, burst 50) is spent by its 50th request: its 51st
	// waits for a slot ahead, and its share's TAT is a second ahead.
	batch("B", 51)
	// C is sent now; the boundary's TAT is half a second ahead.
	batch("C", 1)
	base := l.cache.get("b", l.buildKeys).base
	hash := rdb.PTTL(ctx, base+queueSlotsSuffix).Val()
	set := rdb.PTTL(ctx, base+queueLatestSuffix).Val()
	if hash <= 0 || set <= 0 {
		t.Fatalf("TTLs %v (hash) and %v (sorted set): want both keys with a TTL", hash, set)
	}
	if hash > set {
		t.Fatalf("the hash of slots expires in %v, after the sorted set of owners (%v)", hash, set)
	}
}
