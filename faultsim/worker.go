package faultsim

// The worker: the job that drives one action, deciding after every call by
// Next exactly as docs/outcomes.md tells a worker to.

import (
	"fmt"
	"net/http"
	"time"

	"github.com/retrybudget/retrybudget"
)

// job is the caller of action a: a job queue that delivers it to a worker,
// and delivers it once more later when the schedule says so (at least
// once delivery).
func (r *Run) job(a int) {
	time.Sleep(r.s.Actions[a].Start)
	r.deliver(a)
	if r.s.Actions[a].Again {
		time.Sleep(r.s.Redelivery)
		r.mu.Lock()
		r.raced[a] = true // a duplicate: the provider's key or the ledger must absorb it
		r.mu.Unlock()
		r.Logf("queue: action %d delivered again", a)
		r.call(a, maxRuns+1, r.proc(a%len(r.procs)))
	}
}

// deliver runs one delivery of action a's job as a worker does: after
// every call it asks Next (for an SDK, the captured record's Next with the
// SDK's error), runs the same action again on StepRetry, not before
// RetryAt (zero: its own backoff), ends on StepDone and StepStop, and
// leaves StepHold to the Monitor's Reconciler or an operator. Nothing else
// the call returned steers it, so "at most one effect" (checkEnd) is
// checked across everything a worker does on that advice. A worker whose
// process died is redelivered after the queue's visibility timeout.
func (r *Run) deliver(a int) {
	L := r.w.Lease
	for run := 1; run <= maxRuns; run++ {
		res := r.call(a, run, r.proc((a+run-1)%len(r.procs)))
		if res.died {
			r.mu.Lock()
			r.died[a] = true
			r.mu.Unlock()
			time.Sleep(r.s.Redelivery) // the queue's visibility timeout
			continue
		}
		r.Logf("worker: action %d run %d: Next says %v (%s), retry at %v", a, run, res.step,
			retrybudget.ReasonCode(res.next.Reason), relTime(r.start, res.next.RetryAt))
		switch res.step {
		case retrybudget.StepDone, retrybudget.StepStop:
			return
		case retrybudget.StepHold:
			return // the Monitor's Reconciler's, or an operator's
		}
		if at := res.next.RetryAt; !at.IsZero() {
			// A RetryAt far off (a provider's long Retry-After) ends the
			// job for this delivery: the queue would snooze it.
			time.Sleep(min(max(time.Until(at), 0)+time.Millisecond, 3*L))
		} else {
			time.Sleep(L / 3) // the worker's own backoff
		}
	}
}

// advise is what the worker reads after one call: Next(resp, err) for a
// raw call; for an SDK, which hides the response and returns an error of
// its own for a status it does not accept, the captured record's
// Next(sdkErr).
func (r *Run) advise(captured *retrybudget.Captured, resp *http.Response, err error) (retrybudget.Step, retrybudget.Outcome) {
	if !r.s.SDK {
		return retrybudget.Next(resp, err)
	}
	var sdkErr error
	switch {
	case err != nil:
		sdkErr = fmt.Errorf("sdk: request failed: %w", err)
	case resp != nil && resp.StatusCode >= 400:
		sdkErr = &sdkStatusError{status: resp.StatusCode}
	}
	return captured.Next(sdkErr)
}

// sdkStatusError is an SDK's error for an answer it does not accept: a
// typed error that carries no Outcome, as openai-go's *Error.
type sdkStatusError struct{ status int }

func (e *sdkStatusError) Error() string { return fmt.Sprintf("sdk: status %d", e.status) }
