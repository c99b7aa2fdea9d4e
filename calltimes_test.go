package retrybudget

import (
	"fmt"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// The estimate is bounded in entries: a new tenant and operation past the
// cap evicts the least recently seen one, never a busy one, and never
// refuses the newcomer.
func TestCallTimesEvictTheColdestPairAtTheCap(t *testing.T) {
	var c callTimes
	key := func(i int) ledger.Key {
		return ledger.Key{Tenant: fmt.Sprintf("t%d", i), Operation: "charge", Key: "k"}
	}
	for i := range maxCallTimes {
		c.observe(key(i), time.Second)
	}
	c.observe(key(0), time.Second) // t0 is busy; t1 is now the coldest
	c.observe(key(maxCallTimes), 2*time.Second)
	if len(c.runs) != maxCallTimes {
		t.Fatalf("%d pairs tracked, want the cap %d", len(c.runs), maxCallTimes)
	}
	if _, ok := c.usual(key(1)); ok {
		t.Fatal("the coldest pair was kept")
	}
	for _, i := range []int{0, 2, maxCallTimes} {
		if _, ok := c.usual(key(i)); !ok {
			t.Fatalf("t%d was evicted", i)
		}
	}
}

// The wait is what is left of the usual run since the grant, at least a
// quarter of it, and never past the lease; without an estimate, or with a
// nil estimate, it is the lease.
func TestCallTimesPendingWait(t *testing.T) {
	k := ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-1"}
	now := time.Unix(1_000_000, 0)
	res := func(sinceGrant, lease time.Duration) ledger.Reservation {
		return ledger.Reservation{Decision: ledger.Decision{Verdict: ledger.VerdictPending}, RetryAfter: lease,
			Record: ledger.Record{LeaseUntil: now.Add(lease), Attempts: []ledger.Attempt{
				{N: 1, At: now.Add(-sinceGrant), Class: "created"},
				{N: 2, At: now.Add(-sinceGrant / 2), Class: "timeout"},
			}}}
	}
	var c callTimes
	if got := c.pendingWait(k, res(0, 30*time.Second)); got != 30*time.Second {
		t.Fatalf("no estimate: %s, want the lease", got)
	}
	if got := (*callTimes)(nil).pendingWait(k, res(0, 30*time.Second)); got != 30*time.Second {
		t.Fatalf("nil estimate: %s, want the lease", got)
	}
	c.observe(k, 4*time.Second)
	for _, tc := range []struct {
		sinceGrant, lease, want time.Duration
	}{
		{0, 30 * time.Second, 4 * time.Second},
		{time.Second, 30 * time.Second, 3 * time.Second},
		{10 * time.Second, 30 * time.Second, time.Second}, // slower than usual: a quarter of the usual run
		{0, 2 * time.Second, 2 * time.Second},             // never past the lease
	} {
		if got := c.pendingWait(k, res(tc.sinceGrant, tc.lease)); got != tc.want {
			t.Errorf("%s since the grant, lease %s: wait %s, want %s", tc.sinceGrant, tc.lease, got, tc.want)
		}
	}
	other := ledger.Key{Tenant: "globex", Operation: "charge", Key: "order-1"}
	if got := c.pendingWait(other, res(0, 30*time.Second)); got != 30*time.Second {
		t.Fatalf("another tenant: %s, want the lease (acme's calls say nothing of it)", got)
	}
}
