package idempotency

import (
	"sync"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// maxTypicalOperations caps the operations whose run time is tracked: the
// Operation function may derive names from the request, which a caller
// chooses. Past the cap a new operation is not tracked, and its pending
// answers use Config.PendingRetryAfter.
const maxTypicalOperations = 1024

// typicalWeight is the weight of the newest run in the moving average.
const typicalWeight = 0.25

// typical tracks, per operation, how long the handler usually runs: an
// exponentially weighted moving average of the runs of this process. It
// tells a duplicate that finds the action running (409 TypePending) when
// the answer is likely ready, instead of the end of the owner's lease.
type typical struct {
	mu   sync.Mutex               // guards runs
	runs map[string]time.Duration // operation -> moving average
}

// observe records one run of op that took d.
func (t *typical) observe(op string, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.runs == nil {
		t.runs = map[string]time.Duration{}
	}
	avg, ok := t.runs[op]
	switch {
	case ok:
		t.runs[op] = avg + time.Duration(typicalWeight*float64(d-avg))
	case len(t.runs) < maxTypicalOperations:
		t.runs[op] = d
	}
}

// get returns op's moving average, and false when no run was observed.
func (t *typical) get(op string) (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	d, ok := t.runs[op]
	return d, ok
}

// pendingWait returns the Retry-After of a 409 TypePending for res, a
// pending verdict on k at now: what is left of k's operation's usual run
// time since the current owner took the action (hint when no run was
// observed), at least minPendingWait, never past the owner's lease
// (res.RetryAfter), after which the action is taken over anyway.
func (t *typical) pendingWait(k ledger.Key, res ledger.Reservation, now time.Time, hint time.Duration) time.Duration {
	wait := hint
	if d, ok := t.get(k.Operation); ok {
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
