package limiter

import (
	"strings"
	"testing"
)

// TestBatchesTakeOwnersInTurn: a group's next batch takes one waiting
// caller per owner in turn, so an owner with many callers waiting cannot
// keep another's one out of the batch; within an owner, first come first,
// and a withdrawn caller is skipped.
func TestBatchesTakeOwnersInTurn(t *testing.T) {
	var g group
	var withdrawn *pending
	for _, o := range strings.Split("AAAAABCC", "") {
		p := &pending{in: slotRequest{owner: o}}
		g.add(p)
		if o == "B" {
			withdrawn = p
		}
	}
	g.add(&pending{in: slotRequest{owner: "D"}})
	if !g.remove(withdrawn) || g.remove(withdrawn) {
		t.Fatal("remove: want true once, then false")
	}
	g.add(&pending{in: slotRequest{owner: "B"}}) // B again, now behind D
	owners := func(batch []*pending) string {
		var b strings.Builder
		for _, p := range batch {
			b.WriteString(p.in.owner)
		}
		return b.String()
	}
	for _, want := range []string{"ACDB", "ACAA", "A", ""} {
		if got := owners(g.take(4)); got != want {
			t.Fatalf("batch %q, want %q", got, want)
		}
	}
	if g.n != 0 || len(g.queues) != 0 {
		t.Fatalf("after taking all: n %d, %d queues", g.n, len(g.queues))
	}
}
