package limiter

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// slowRoundTrips makes every round trip of l's batches take before on the
// way to Redis and after on the way back, on clk.
func slowRoundTrips(l *Redis, clk *fakeClock, before, after time.Duration) {
	run := l.batch.run
	l.batch.run = func(ctx context.Context, k groupKey, ins []slotRequest) ([]slotResult, error) {
		clk.Advance(before)
		outs, err := run(ctx, k, ins)
		clk.Advance(after)
		return outs, err
	}
}

// TestFairQueueSlotPastDeadlineIsRefused: with Redis 250ms away, a slot
// the script grants within the request's wait as it measured it, but
// which comes after the deadline once the reply is back, is a refusal
// with RetryAfter; the caller does not sleep past its deadline.
func TestFairQueueSlotPastDeadlineIsRefused(t *testing.T) {
	l, clk := newQueued(t, FairQueue{MaxWait: time.Second})
	// Ten other owners hold the slots at +0ms .. +900ms.
	for i := range 10 {
		if err := l.batchReserve(fmt.Sprint("X", i), 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	slowRoundTrips(l, clk, 250*time.Millisecond, 250*time.Millisecond)
	start := clk.Now()
	deadline := start.Add(time.Second)
	d := allow(t, l, Request{Boundary: "b", Owner: "D"})
	// The script runs at +250ms and grants +1000ms, 750ms ahead, all the
	// wait left; the reply is back at +500ms, so the slot would be sent at
	// +1250ms.
	if clk.Now().After(deadline) {
		t.Fatalf("Allow returned at +%v, past its deadline +1s: %+v", clk.Now().Sub(start), d)
	}
	if d.Allowed || d.Reason != ReasonRate || d.RetryAfter != 750*time.Millisecond {
		t.Fatalf("decision %+v, want refused (rate) with RetryAfter 750ms", d)
	}
}

// TestFairQueueWaitCountsFromTheBatch: a request's wait for a slot is what
// is left of its deadline when its batch is sent, not when it asked.
func TestFairQueueWaitCountsFromTheBatch(t *testing.T) {
	l, clk := newQueued(t, FairQueue{})
	// Two other owners hold +0ms and +100ms; the next slot is +200ms.
	for _, o := range []string{"X1", "X2"} {
		if err := l.batchReserve(o, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	dl := clk.Now().Add(250 * time.Millisecond)
	d := slotRequest{deadline: dl, owner: l.keys.owner("D"), weight: 1}
	e := slotRequest{deadline: dl, owner: l.keys.owner("E"), weight: 1}
	clk.Advance(100 * time.Millisecond) // waited for the batch
	// Sent with 150ms left: D's slot at +200ms is 100ms ahead and fits;
	// E's at +300ms, 200ms ahead, does not.
	outs, err := l.runBatch(context.Background(), groupKey{boundary: "b"}, []slotRequest{d, e})
	if err != nil {
		t.Fatal(err)
	}
	if !outs[0].granted || outs[0].wait != 100*time.Millisecond || outs[1].granted {
		t.Fatalf("got %+v, want D granted in 100ms and E refused", outs)
	}
}
