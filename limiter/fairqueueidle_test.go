package limiter

import (
	"context"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/redistest"
)

// TestFairQueueUnsaturatedBatch: a batch that every limit has tokens for
// now, whose owners hold no slot ahead, is granted now as a whole (the
// script's short reply), takes one token per request and still records
// each owner's latest slot, so the next batch queues exactly behind it.
func TestFairQueueUnsaturatedBatch(t *testing.T) {
	rdb := redistest.Client(t)
	clk := newRealFakeClock()
	// 10/s, burst 5: 100ms between tokens, 5 at once.
	l := newTestRedis(t, rdb, redistest.Prefix(t), RedisConfig{Limits: []Limit{PerSecond(10).WithBurst(5)}, Queue: &FairQueue{MaxWait: time.Minute}})
	l.now, l.scriptNow = clk.Now, clk.Now
	k := groupKey{boundary: "b"}
	req := func(owner string) slotRequest {
		return slotRequest{maxWait: time.Minute, owner: l.keys.owner(owner), weight: 1}
	}
	outs, err := l.runBatch(context.Background(), k, []slotRequest{req("A"), req("A"), req("B"), req("B")})
	if err != nil {
		t.Fatal(err)
	}
	for j, o := range outs {
		if !o.granted || o.wait != 0 || o.depth != 0 {
			t.Fatalf("request %d of an unsaturated batch: %+v, want granted now", j, o)
		}
	}
	base := l.cache.get("b", l.buildKeys).base
	if n := rdb.ZCard(context.Background(), base+queueLatestSuffix).Val(); n != 2 {
		t.Fatalf("%d owners recorded, want 2", n)
	}
	// Four of five tokens taken: one is left now, the next is due in 100ms.
	outs, err = l.runBatch(context.Background(), k, []slotRequest{req("C"), req("D")})
	if err != nil {
		t.Fatal(err)
	}
	if !outs[0].granted || outs[0].wait != 0 {
		t.Fatalf("the last token: %+v, want granted now", outs[0])
	}
	if !outs[1].granted || outs[1].wait != 100*time.Millisecond || outs[1].depth != 1 {
		t.Fatalf("past the burst: %+v, want a slot in 100ms", outs[1])
	}
}
