package budget

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/retrybudget/retrybudget/internal/redistest"
)

// On a three-master cluster, destinations spread over the masters by their
// hash tag, each decision runs on its destination's slot, and two budgets
// (two processes) share every destination's counts.
func TestRedisCluster(t *testing.T) {
	cl := redistest.StartCluster(t)
	cc := cl.Client(t)
	ctx := context.Background()
	prefix := redistest.Prefix(t)
	cfg := RedisConfig{Config: Config{Percent: 0.5, MinRetriesPerSec: -1}, Prefix: prefix}
	a, b := newRedis(t, cc, cfg), newRedis(t, cc, cfg)

	const dests = 30
	for i := range dests {
		dest := fmt.Sprintf("api-%d.example.com", i)
		deposit(a, dest, 10)
		ga, _ := withdrawN(t, a, dest, 2) // sends a's deposits
		gb, d := withdrawN(t, b, dest, 6)
		if ga != 2 || gb != 3 || d.Deposits != 10 || d.Retries != 5 {
			t.Fatalf("%s: a %d, b %d allowed, last %+v; want 5 of 10 between them", dest, ga, gb, d)
		}
		// The hash tag alone picks the slot: another prefix, same slot.
		s1, err1 := cc.ClusterKeySlot(ctx, destKey(testKeyed, prefix, dest)).Result()
		s2, err2 := cc.ClusterKeySlot(ctx, destKey(testKeyed, "elsewhere:", dest)).Result()
		if err1 != nil || err2 != nil || s1 != s2 {
			t.Fatalf("%s: slots %d, %d (%v, %v); want the hash tag's slot for both", dest, s1, s2, err1, err2)
		}
	}

	total := 0
	for _, addr := range cl.Addrs {
		node := redis.NewClient(&redis.Options{Addr: addr})
		n := len(scanKeys(t, node, prefix))
		node.Close()
		if n == 0 {
			t.Errorf("master %s holds none of the %d destinations; want them spread", addr, dests)
		}
		t.Logf("master %s holds %d destinations", addr, n)
		total += n
	}
	if total != dests {
		t.Errorf("%d keys on the masters; want one per destination, %d", total, dests)
	}
}
