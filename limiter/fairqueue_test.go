package limiter

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// asker is one request loop of a simulated owner: it asks, waits for its
// slot, sends at the slot and asks again at once.
type asker struct {
	owner string
	next  time.Time
}

// grant is a slot the queue gave an owner.
type grant struct {
	owner string
	at    time.Time
}

// simulate runs askers against l's real script on the fake clock clk until
// n slots are granted, deciding together the askers due at the same
// instant (as coalescing would), and returns the grants in slot order.
func simulate(t *testing.T, l *Redis, clk *fakeClock, askers []*asker, n int) []grant {
	t.Helper()
	for _, a := range askers {
		a.next = clk.Now()
	}
	var grants []grant
	for len(grants) < n {
		now := slices.MinFunc(askers, func(a, b *asker) int { return a.next.Compare(b.next) }).next
		clk.Advance(now.Sub(clk.Now()))
		var due []*asker
		var ins []slotRequest
		for _, a := range askers {
			if a.next.Equal(now) {
				due = append(due, a)
				ins = append(ins, slotRequest{maxWait: 10 * time.Second, owner: l.keys.owner(a.owner), weight: l.batch.queue.weight(a.owner)})
			}
		}
		outs, err := l.runBatch(context.Background(), groupKey{boundary: "b"}, ins)
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range outs {
			switch {
			case o.granted:
				due[i].next = now.Add(o.wait)
				grants = append(grants, grant{due[i].owner, due[i].next})
			case o.reason == reasonQueue:
				due[i].next = now.Add(o.retry)
			default:
				t.Fatalf("%s refused at %v: %+v", due[i].owner, now, o)
			}
		}
	}
	slices.SortStableFunc(grants, func(a, b grant) int { return a.at.Compare(b.at) })
	return grants[:n]
}

func askers(owner string, n int) []*asker {
	out := make([]*asker, n)
	for i := range out {
		out[i] = &asker{owner: owner}
	}
	return out
}

// order returns the owners of grants as one string, and fails t if two
// grants are not exactly one interval apart: the queue must not leave a
// slot unused while someone waits.
func order(t *testing.T, grants []grant, interval time.Duration) string {
	t.Helper()
	var b strings.Builder
	for i, g := range grants {
		if i > 0 && g.at.Sub(grants[i-1].at) != interval {
			t.Fatalf("slot %d at +%v after the one before, want %v: the queue idled", i, g.at.Sub(grants[i-1].at), interval)
		}
		b.WriteString(g.owner)
	}
	return b.String()
}

func newQueued(t *testing.T, q FairQueue) (*Redis, *fakeClock) {
	clk := newRealFakeClock()
	return newClockedRedis(t, clk, RedisConfig{Limits: []Limit{PerSecond(10)}, Queue: &q}), clk
}

// TestFairQueueRoundRobin: owner A with six request loops and owner B with
// one share a saturated boundary slot for slot, with no slot left unused.
func TestFairQueueRoundRobin(t *testing.T) {
	l, clk := newQueued(t, FairQueue{})
	got := order(t, simulate(t, l, clk, append(askers("A", 6), askers("B", 1)...), 40), 100*time.Millisecond)
	// The first A goes at once; from then on the two alternate.
	if want := "A" + strings.Repeat("AB", 19) + "A"; got != want {
		t.Fatalf("slots went to\n%s, want\n%s", got, want)
	}
}

// TestFairQueueLoneOwner: an owner alone on the boundary gets every slot,
// whatever its weight: the queue is work-conserving.
func TestFairQueueLoneOwner(t *testing.T) {
	l, clk := newQueued(t, FairQueue{})
	if got := order(t, simulate(t, l, clk, askers("A", 6), 30), 100*time.Millisecond); got != strings.Repeat("A", 30) {
		t.Fatalf("slots went to %s", got)
	}
}

// TestFairQueueWeights: an owner of weight 2 gets two slots per round.
func TestFairQueueWeights(t *testing.T) {
	l, clk := newQueued(t, FairQueue{Weights: map[string]int{"A": 2}})
	got := order(t, simulate(t, l, clk, append(askers("A", 6), askers("B", 3)...), 60), 100*time.Millisecond)
	a := strings.Count(got[3:], "A")
	if b := strings.Count(got[3:], "B"); a < 2*b-2 || a > 2*b+2 {
		t.Fatalf("A got %d and B %d slots after the start (%s), want 2:1", a, b, got)
	}
}

// TestFairQueueAllowWaitsForItsSlot: Allow on a saturated boundary waits
// for the slot it reserved and then allows; a request whose slot would
// come after its deadline returns at once with its place and takes
// nothing; an owner holding all its slots is told its turn.
func TestFairQueueAllowWaitsForItsSlot(t *testing.T) {
	l, clk := newQueued(t, FairQueue{MaxWait: 150 * time.Millisecond})
	start := clk.Now()
	if d := allow(t, l, Request{Boundary: "b", Owner: "A"}); !d.Allowed || clk.Now() != start || d.Waited != 0 {
		t.Fatalf("first request: %+v after %v, want allowed at once", d, clk.Now().Sub(start))
	}
	// The wait inside Allow is reported (Decision.Waited), so the Transport
	// counts it like any limiter wait.
	if d := allow(t, l, Request{Boundary: "b", Owner: "B"}); !d.Allowed || clk.Now().Sub(start) != 100*time.Millisecond || d.QueueDepth != 1 || d.Waited != 100*time.Millisecond {
		t.Fatalf("second request: %+v after %v, want allowed after waiting 100ms for its slot (Waited), depth 1", d, clk.Now().Sub(start))
	}
	// At +100ms the next slot is +200ms. X1, X2 and C reserve +200ms,
	// +300ms and +400ms; D's would be +500ms, past its 150ms.
	for _, o := range []string{"X1", "X2", "C"} {
		if err := l.batchReserve(o, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	d := allow(t, l, Request{Boundary: "b", Owner: "D"})
	if d.Allowed || d.Reason != ReasonRate || d.RetryAfter != 400*time.Millisecond || clk.Now().Sub(start) != 100*time.Millisecond {
		t.Fatalf("request past its deadline: %+v, want refused at once with its place in 400ms", d)
	}
	// C holds its one slot, which comes after C's deadline, so C's next
	// request is refused at once with its turn: a round (three owners)
	// after its slot.
	d = allow(t, l, Request{Boundary: "b", Owner: "C"})
	if d.Allowed || d.Reason != ReasonQueue || d.RetryAfter != 600*time.Millisecond || d.QueueDepth != 1 {
		t.Fatalf("owner holding its slots: %+v, want refused (queue) with its turn in 600ms and depth 1", d)
	}
}

// batchReserve reserves a slot for owner without waiting for it.
func (l *Redis) batchReserve(owner string, maxWait time.Duration) error {
	_, err := l.runBatch(context.Background(), groupKey{boundary: "b"},
		[]slotRequest{{maxWait: maxWait, owner: l.keys.owner(owner), weight: 1}})
	return err
}

// TestFairQueueLookahead: an owner alone holds slots up to the lookahead
// beyond its weight; the next owner gets the slot after them, and the lone
// owner's extra slots stop once another owner holds one.
func TestFairQueueLookahead(t *testing.T) {
	l, _ := newQueued(t, FairQueue{Lookahead: 250 * time.Millisecond})
	req := func(owner string) slotRequest {
		return slotRequest{maxWait: 10 * time.Second, owner: l.keys.owner(owner), weight: 1}
	}
	outs, err := l.runBatch(context.Background(), groupKey{boundary: "b"},
		[]slotRequest{req("A"), req("A"), req("A"), req("A"), req("B"), req("A")})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range outs {
		got = append(got, fmt.Sprintf("%v:%v", o.granted, o.wait))
	}
	// A: now, +100ms (its weight), +200ms (within the lookahead); the
	// fourth is refused with its place at +300ms, the next slot. B gets
	// +300ms. A's last is refused although A is the one waiting: B holds a
	// slot, so a round is two slots, and it is the second A in line:
	// max(+400ms, A's last slot +200ms + a round) + a round = +600ms.
	want := []string{"true:0s", "true:100ms", "true:200ms", "false:300ms", "true:300ms", "false:600ms"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
