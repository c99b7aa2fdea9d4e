package riverjobs

import (
	"errors"
	"time"

	"github.com/retrybudget/retrybudget"
)

// Verb is what the Middleware tells River to do with a job after one run.
type Verb int

const (
	// VerbComplete completes the job: the worker returned nil.
	VerbComplete Verb = iota
	// VerbSnooze snoozes the job until Decision.Until (river.JobSnooze): the
	// provider, the rate limiter or another owner of the action said "not
	// now". A snooze does not count as one of River's attempts.
	VerbSnooze
	// VerbCancel cancels the job (river.JobCancel): the provider rejected
	// the request, its key was used for a different request, or its Action
	// is invalid (retrybudget.StepStop). Running it again cannot help.
	VerbCancel
	// VerbHold cancels the job with its action held for reconciliation: the
	// provider may have applied it and nothing can tell. It must not run
	// again as new work; an operator, or a Reconciler on the Transport,
	// settles the action first.
	VerbHold
	// VerbRetry hands the error to River's retry, which counts an attempt;
	// RetryPolicy keeps the retry no sooner than Decision.Until.
	VerbRetry
	// VerbWorker leaves a snooze or cancel the worker returned itself as it
	// is.
	VerbWorker
)

var verbNames = [...]string{
	VerbComplete: "completed",
	VerbSnooze:   "snoozed",
	VerbCancel:   "cancelled",
	VerbHold:     "held",
	VerbRetry:    "retried",
	VerbWorker:   "worker",
}

// String returns the verb's name as written in job metadata.
func (v Verb) String() string {
	if v >= 0 && int(v) < len(verbNames) {
		return verbNames[v]
	}
	return "unknown"
}

// Decision is the Middleware's verdict on one run of a job.
type Decision struct {
	// Verb is what River is told to do.
	Verb Verb
	// Until is, for VerbSnooze, when the job runs again; for VerbRetry,
	// the earliest time River's retry may run it (zero when any is fine).
	Until time.Time
	// Outcome is the Outcome the decision was made on: the one carried by
	// the worker's *retrybudget.Error, else the last recorded call's. Nil
	// when there is neither.
	Outcome *retrybudget.Outcome
}

// Decide maps how one run of a job ended to a River verb. err is what the
// worker returned; o is the Outcome of the run's provider calls, the first
// that holds (retrybudget.StepHold) or else the last (ok false when it
// made none through a recording Transport); snoozes is how many
// times the job has been snoozed; now is the current time; spread is a
// random extra time for a snooze, in [0, Config.SnoozeSpread].
//
// Only "not now" snoozes: a RetryAt still ahead that someone who knows
// named (see notNow). A time already passed snoozes too, for the spread
// alone, when the next run is held at a gate before anything is sent (see
// gated): the run's own ledger and database work outlasted the wait, and
// nothing failed that an attempt should count. A provider's time that has
// passed (Retry-After: 0 from a failing provider) goes to River's retry,
// whose backoff the next run then waits out. A RetryAt that is only the
// next backoff step after failures goes to River's retry as its floor, so
// a provider that keeps failing uses up the job's attempts instead of
// snoozing the job forever. Until is never more than Config.MaxDelay
// after now.
func Decide(cfg Config, err error, o retrybudget.Outcome, ok bool, snoozes int, now time.Time, spread time.Duration) Decision {
	cfg = cfg.withDefaults()
	var rbErr *retrybudget.Error
	// The worker's error speaks for the run, unless an earlier call holds:
	// a call that may have been applied holds the job, whatever the
	// worker did after it.
	if errors.As(err, &rbErr) && (!ok || !holds(o)) {
		o, ok = rbErr.Outcome, true
	}
	d := Decision{}
	if ok {
		d.Outcome = &o
	}
	switch {
	case err == nil:
		d.Verb = VerbComplete
	case isRiverVerb(err) && !(ok && holds(o)):
		// The worker's own snooze or cancel stands, except over a call
		// that holds: snoozed, it would meet the same held action at
		// every run, for ever.
		d.Verb = VerbWorker
	case !ok || o.Reason == nil:
		// The worker failed on its own (its database, a bug) after any
		// provider call succeeded: River retries, and the ledger replays.
		d.Verb = VerbRetry
	default:
		// The Transport's rule for what comes next (retrybudget.Next), in
		// River's verbs; a retry is a snooze when it is "not now".
		switch step, _ := retrybudget.Next(nil, o.Err()); {
		case step == retrybudget.StepHold:
			d.Verb = VerbHold
		case step == retrybudget.StepStop:
			d.Verb = VerbCancel
		case notNow(o) && snoozes < cfg.MaxSnoozes &&
			(o.RetryAt.After(now) || (gated(o.Reason) && !o.RetryAt.IsZero())):
			from := o.RetryAt
			if from.Before(now) {
				from = now
			}
			d.Verb, d.Until = VerbSnooze, from.Add(max(spread, 0))
		default:
			d.Verb, d.Until = VerbRetry, o.RetryAt
		}
	}
	if latest := now.Add(cfg.MaxDelay); d.Until.After(latest) {
		d.Until = latest
	}
	return d
}

// holds reports whether o's call is left to a reconciler or an operator.
func holds(o retrybudget.Outcome) bool {
	step, _ := retrybudget.Next(nil, o.Err())
	return step == retrybudget.StepHold
}

// notNow reports whether o's reason means "not now, come back at RetryAt"
// with a time named by someone who knows: the provider's Retry-After beyond
// MaxWait, the rate limiter's wait (or a boundary's cooldown), the lease of
// another live owner of the action, or the provider's time when the retry
// budget refused to wait for it. Nothing failed that an attempt should
// count. A call that ended with ErrWaitTooLong after more than one send
// is not one: the provider failed it again and again until the Transport's
// own backoff would have passed MaxWait, and River's retry counts that
// (snoozing it would send a burst every few seconds, MaxSnoozes times,
// with no backoff that grows).
func notNow(o retrybudget.Outcome) bool {
	if errors.Is(o.Reason, retrybudget.ErrWaitTooLong) {
		return o.Attempts <= 1
	}
	for _, r := range [...]error{retrybudget.ErrRateLimited, retrybudget.ErrPending, retrybudget.ErrBudgetExhausted} {
		if errors.Is(o.Reason, r) {
			return true
		}
	}
	return false
}

// gated reports whether reason is a "not now" whose next run waits at a
// gate of the Transport before anything is sent: the rate limiter, or the
// ledger while another owner holds the action. A run that comes back too
// early is held there again, never sent.
func gated(reason error) bool {
	return errors.Is(reason, retrybudget.ErrRateLimited) || errors.Is(reason, retrybudget.ErrPending)
}
