package idempotency

import (
	"container/list"
	"sync"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// maxTypicalOperations caps the operations whose run time is tracked: the
// Operation function may derive names from the request, which a caller
// chooses. Past the cap a new operation is not tracked, and its pending
// answers use Config.PendingRetryAfter.
const maxTypicalOperations = 1024

// maxTypicalTenantOperations caps the (tenant, operation) pairs whose run
// time is tracked. Tenants come from callers: past the cap the pair
// observed longest ago is forgotten, and its tenant's pending answers fall
// back to the operation's average until it runs again.
const maxTypicalTenantOperations = 4096

// typicalWeight is the weight of the newest run in the moving average.
const typicalWeight = 0.25

// typical tracks how long the handler usually runs, per tenant and
// operation and per operation: exponentially weighted moving averages of
// the runs of this process. It tells a duplicate that finds the action
// running (409 TypePending) when the answer is likely ready, instead of
// the end of the owner's lease. A tenant's answer comes from its own runs,
// so that another tenant's slow runs of the same operation (slow by what
// that tenant asks, or on purpose) do not hold it back; the operation's
// average, of every tenant's runs, is the fallback for a tenant with none.
// The zero value tracks nothing yet and is ready to use.
type typical struct {
	mu   sync.Mutex               // guards runs, byTenant and lru
	runs map[string]time.Duration // operation -> moving average
	// byTenant finds a (tenant, operation)'s entry in lru, whose front
	// is the pair observed last.
	byTenant map[tenantOperation]*list.Element
	lru      list.List // of *tenantRun
}

// tenantOperation is one tenant's operation.
type tenantOperation struct{ tenant, operation string }

// tenantRun is one (tenant, operation)'s moving average.
type tenantRun struct {
	key tenantOperation
	avg time.Duration
}

// observe records one run of tenant's op that took d.
func (t *typical) observe(tenant, op string, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.runs == nil {
		t.runs = map[string]time.Duration{}
		t.byTenant = map[tenantOperation]*list.Element{}
	}
	avg, ok := t.runs[op]
	switch {
	case ok:
		t.runs[op] = avg + time.Duration(typicalWeight*float64(d-avg))
	case len(t.runs) < maxTypicalOperations:
		t.runs[op] = d
	default:
		return // not tracked, for any tenant
	}
	key := tenantOperation{tenant, op}
	if e, ok := t.byTenant[key]; ok {
		r := e.Value.(*tenantRun)
		r.avg += time.Duration(typicalWeight * float64(d-r.avg))
		t.lru.MoveToFront(e)
		return
	}
	if t.lru.Len() >= maxTypicalTenantOperations {
		coldest := t.lru.Back()
		delete(t.byTenant, coldest.Value.(*tenantRun).key)
		t.lru.Remove(coldest)
	}
	t.byTenant[key] = t.lru.PushFront(&tenantRun{key: key, avg: d})
}

// get returns how long tenant's op usually runs: the tenant's own moving
// average, else the operation's, and false when no run was observed.
func (t *typical) get(tenant, op string) (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.byTenant[tenantOperation{tenant, op}]; ok {
		return e.Value.(*tenantRun).avg, true
	}
	d, ok := t.runs[op]
	return d, ok
}

// pendingWait returns the Retry-After of a 409 TypePending for res, a
// pending verdict on k at now: what is left of the usual run time of k's
// tenant's operation since the current owner took the action (hint when
// no run was observed), at least minPendingWait, never past the owner's
// lease (res.RetryAfter), after which the action is taken over anyway.
func (t *typical) pendingWait(k ledger.Key, res ledger.Reservation, now time.Time, hint time.Duration) time.Duration {
	wait := hint
	if d, ok := t.get(k.Tenant, k.Operation); ok {
		wait = d
		if n := len(res.Record.Attempts); n > 0 && !res.Record.Attempts[n-1].At.IsZero() {
			wait -= now.Sub(res.Record.Attempts[n-1].At)
		}
	}
	wait = max(wait, minPendingWait)
	if res.RetryAfter > 0 && wait > res.RetryAfter {
		wait = res.RetryAfter
	}
	return wait
}

// minPendingWait is the shortest Retry-After of a pending answer: its
// header counts whole seconds.
const minPendingWait = time.Second
