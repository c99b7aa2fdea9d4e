package idempotency

import (
	"fmt"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// A pending answer says what is left of the operation's usual run time
// since the owner took the action: at least a second (Retry-After counts
// seconds), never past the owner's lease, and the hint until a run of the
// operation has ended.
func TestPendingWait(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	k := ledger.Key{Tenant: "t", Operation: "POST /orders", Key: "k"}
	pendingAt := func(took time.Time, lease time.Duration) ledger.Reservation {
		return ledger.Reservation{RetryAfter: lease,
			Record: ledger.Record{Attempts: []ledger.Attempt{{N: 1, At: took}}}}
	}
	var tp typical
	if got := tp.pendingWait(k, pendingAt(now, 30*time.Second), now, 3*time.Second); got != 3*time.Second {
		t.Fatalf("no run observed: %v; want the hint, 3s", got)
	}
	for range 8 {
		tp.observe(k.Tenant, k.Operation, 4*time.Second)
	}
	tests := []struct {
		name  string
		took  time.Time
		lease time.Duration
		want  time.Duration
	}{
		{"just taken", now, 30 * time.Second, 4 * time.Second},
		{"half done", now.Add(-1500 * time.Millisecond), 30 * time.Second, 2500 * time.Millisecond},
		{"overdue", now.Add(-10 * time.Second), 30 * time.Second, time.Second},
		{"lease ends first", now, 2 * time.Second, 2 * time.Second},
	}
	for _, tt := range tests {
		if got := tp.pendingWait(k, pendingAt(tt.took, tt.lease), now, time.Second); got != tt.want {
			t.Errorf("%s: %v; want %v", tt.name, got, tt.want)
		}
	}
	// The average moves toward new runs.
	tp.observe(k.Tenant, k.Operation, 8*time.Second)
	if d, _ := tp.get(k.Tenant, k.Operation); d != 5*time.Second {
		t.Fatalf("average after a run of 8s: %v; want 5s", d)
	}
}

// Operations are named from the request: past the cap a new one is not
// tracked (its answers use the hint), and tracked ones keep their average.
func TestTypicalIsCapped(t *testing.T) {
	var tp typical
	for i := range maxTypicalOperations + 10 {
		tp.observe("t", fmt.Sprint("op", i), time.Second)
	}
	if n := len(tp.runs); n != maxTypicalOperations {
		t.Fatalf("%d operations tracked; want %d", n, maxTypicalOperations)
	}
	if _, ok := tp.get("t", fmt.Sprint("op", maxTypicalOperations+1)); ok {
		t.Fatal("an operation past the cap is tracked")
	}
}

// Tenants come from callers: past the cap of (tenant, operation) pairs the
// one observed longest ago is forgotten, not the one that ran last, and a
// tenant without runs of its own is told the operation's average.
func TestTypicalTenantsAreCappedColdestFirst(t *testing.T) {
	var tp typical
	const op = "POST /orders"
	for i := range maxTypicalTenantOperations {
		tp.observe(fmt.Sprint("t", i), op, 2*time.Second)
	}
	tp.observe("t0", op, 2*time.Second) // t0 ran last; t1 is now the coldest
	tp.observe("new", op, 2*time.Second)
	if n := tp.lru.Len(); n != maxTypicalTenantOperations || len(tp.byTenant) != n {
		t.Fatalf("%d pairs tracked (%d indexed); want %d", n, len(tp.byTenant), maxTypicalTenantOperations)
	}
	for _, tenant := range []string{"t0", "new", "t2"} {
		if _, ok := tp.byTenant[tenantOperation{tenant, op}]; !ok {
			t.Errorf("%s forgotten; want the coldest, t1, forgotten instead", tenant)
		}
	}
	if _, ok := tp.byTenant[tenantOperation{"t1", op}]; ok {
		t.Error("the coldest pair, t1, is still tracked")
	}
	// A tenant's own runs, and the operation's for a tenant without any.
	tp.observe("quick", op, 300*time.Millisecond)
	if d, _ := tp.get("quick", op); d != 300*time.Millisecond {
		t.Errorf("quick's own average: %v; want 300ms", d)
	}
	opAvg := tp.runs[op]
	if d, ok := tp.get("t1", op); !ok || d != opAvg {
		t.Errorf("forgotten tenant: %v %v; want the operation's %v", d, ok, opAvg)
	}
}
