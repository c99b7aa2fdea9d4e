package lru

import (
	"fmt"
	"testing"
	"time"
)

func TestCapEvictsLeastRecentlyUsed(t *testing.T) {
	c := New[string, int](3, nil)
	for i, k := range []string{"a", "b", "c"} {
		c.Put(k, i, time.Time{})
	}
	c.Get("a") // b is now the least recently used
	c.Put("d", 3, time.Time{})
	if _, ok := c.Get("b"); ok || c.Len() != 3 {
		t.Fatalf("b kept or len %d", c.Len())
	}
	for _, k := range []string{"a", "c", "d"} {
		if _, ok := c.Get(k); !ok {
			t.Errorf("%s evicted", k)
		}
	}
}

// TestSweepIsAmortised: 100k puts examine at most two entries each, and
// expired entries nobody touches again still go.
func TestSweepIsAmortised(t *testing.T) {
	c := New[string, int](1<<20, func(v int, _ time.Time) bool { return v < 50_000 })
	const n = 100_000
	for i := range n {
		c.Put(fmt.Sprint(i), i, time.Time{})
	}
	if v := c.Visited(); v > sweepPerPut*n {
		t.Errorf("visited %d entries for %d puts", v, n)
	}
	if c.Len() > n/2+sweepPerPut {
		t.Errorf("%d entries left, want the expired half swept", c.Len())
	}
}
