package riverjobs

import (
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// floors holds, per job ID, the earliest time River's retry may run a job
// the Middleware handed to it: the Transport's RetryAt. River asks its
// ClientRetryPolicy right after the run, in the same process, so an entry
// lives from the end of one run to that question.
type floors struct {
	mu sync.Mutex // guards at
	at map[int64]time.Time
}

// set records the floor of job id. Entries already past are dropped: a
// job that ran out of attempts is never asked about, and a floor in the
// past bounds nothing.
func (f *floors) set(id int64, at, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, t := range f.at {
		if !t.After(now) {
			delete(f.at, k)
		}
	}
	f.at[id] = at
}

// take returns and forgets the floor of job id.
func (f *floors) take(id int64) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.at[id]
	delete(f.at, id)
	return t, ok
}

// RetryPolicy returns a river.ClientRetryPolicy that schedules a retry as
// base does, but never before the RetryAt of the Outcome that made the
// Middleware hand the job to River's retry. Nil base means River's default
// policy. River asks a worker's own NextRetry first; a worker that defines
// one bypasses this floor.
func (m *Middleware) RetryPolicy(base river.ClientRetryPolicy) river.ClientRetryPolicy {
	if base == nil {
		base = &river.DefaultClientRetryPolicy{}
	}
	return retryPolicy{base: base, floors: &m.floors}
}

type retryPolicy struct {
	base   river.ClientRetryPolicy
	floors *floors
}

// NextRetry implements river.ClientRetryPolicy.
func (p retryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	t := p.base.NextRetry(job)
	if floor, ok := p.floors.take(job.ID); ok && floor.After(t) {
		return floor
	}
	return t
}
