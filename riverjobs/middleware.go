package riverjobs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/retrybudget/retrybudget"
)

// ErrHeld is the cause River records for a job the Middleware cancelled
// because its action's outcome is uncertain: the provider may have applied
// it. The job's metadata names the action; reconcile it before running the
// job again (river.Client.JobRetry), and the ledger then replays or resends
// it under the same key.
var ErrHeld = errors.New("riverjobs: action held for reconciliation")

// ErrPastRetention is why a job is held (with ErrHeld) when its first run
// is older than the ledger's retention (Config.Retention): the records of
// its actions may be gone, so running it again could apply them twice.
// An operator who checked the provider inserts a new job, or settles it.
var ErrPastRetention = errors.New("riverjobs: the job's first run is older than the ledger's retention")

// Middleware is a River worker middleware that runs each job's provider
// calls under one retrybudget.Action derived from the job (see ActionOf),
// maps how the run ended to a River verb (see Decide) and writes a Report
// into the job's metadata.
//
// The worker makes its provider calls with the job's context through an
// http.Client whose Transport is Record(retrybudget.New(cfg)) with a Ledger
// configured: a job River runs twice, or again after its worker died, is
// then replayed by the ledger instead of charging twice. Give that
// Transport a short MaxWait (a second or two): a longer Retry-After or rate
// limit wait then ends the call with a RetryAt, and the job is snoozed
// instead of holding a worker goroutine asleep.
//
// Install it in river.Config.Middleware, and its RetryPolicy in
// river.Config.RetryPolicy. A Middleware is safe for concurrent use.
type Middleware struct {
	river.MiddlewareDefaults
	cfg    Config
	floors floors
}

// New returns a Middleware configured by cfg, whose zero fields take their
// documented defaults.
func New(cfg Config) *Middleware {
	return &Middleware{cfg: cfg.withDefaults(), floors: floors{at: map[int64]time.Time{}}}
}

// Work implements rivertype.WorkerMiddleware.
func (m *Middleware) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	start := time.Now()
	prev, _, _ := reportIn(job.Metadata) // a bad old report only loses its totals
	rep := Report{Runs: prev.Runs + 1, TotalAttempts: prev.TotalAttempts, FirstRun: firstRun(job, prev, start)}
	a, err := ActionOf(m.cfg, job)
	if err == nil && m.pastRetention(rep.FirstRun, start) {
		err = fmt.Errorf("%w: %w: the first run was at %s", ErrHeld, ErrPastRetention, rep.FirstRun.UTC().Format(time.RFC3339))
		rep.Verb, rep.Reason, rep.At = VerbHold.String(), err.Error(), start
		m.write(ctx, rep)
		return river.JobCancel(err)
	}
	if err != nil {
		rep.Verb, rep.Reason, rep.At = VerbCancel.String(), err.Error(), time.Now()
		m.write(ctx, rep)
		return river.JobCancel(err)
	}
	rep.Tenant, rep.Operation, rep.ActionKey = a.Tenant, a.Operation, a.Key
	r := &run{}
	err = doInner(withRun(retrybudget.WithAction(ctx, a), r))

	o, ok, calls, attempts := r.snapshot()
	now := time.Now()
	d := Decide(m.cfg, err, o, ok, snoozesIn(job.Metadata), now, m.spread())
	rep.Verb, rep.Calls, rep.Attempts, rep.At = d.Verb.String(), calls, attempts, now
	rep.TotalAttempts += attempts
	if o := d.Outcome; o != nil {
		rep.Key, rep.Class, rep.Status, rep.Replayed = o.Key, o.Class.String(), o.StatusCode, o.Replayed
	}
	switch o := d.Outcome; {
	case o != nil && o.Reason != nil:
		rep.Reason = o.Err().Error()
	case err != nil:
		rep.Reason = err.Error()
	}
	if !d.Until.IsZero() {
		until := d.Until.UTC()
		rep.RetryAt = &until
	}
	m.write(ctx, rep)

	switch d.Verb {
	case VerbComplete:
		return nil
	case VerbSnooze:
		return river.JobSnooze(max(d.Until.Sub(now), 0))
	case VerbCancel:
		return river.JobCancel(err)
	case VerbHold:
		if isRiverVerb(err) {
			// The worker's own snooze or cancel gives way to the hold;
			// wrapped, River could read it instead of the cancel.
			err = d.Outcome.Err()
		}
		return river.JobCancel(fmt.Errorf("%w: %w", ErrHeld, err))
	case VerbRetry:
		if !d.Until.IsZero() {
			m.floors.set(job.ID, d.Until, now)
		}
	}
	return err
}

// firstRun returns when job's first run started, as its Report says;
// for a job that ran before without reporting (its worker died, or a
// version before FirstRun), its creation, which is earlier; for a job
// running for the first time, start.
func firstRun(job *rivertype.JobRow, prev Report, start time.Time) time.Time {
	switch {
	case !prev.FirstRun.IsZero():
		return prev.FirstRun
	case (prev.Runs > 0 || job.Attempt > 1 || snoozesIn(job.Metadata) > 0) && !job.CreatedAt.IsZero():
		return job.CreatedAt
	}
	return start
}

// pastRetention reports whether the records of the actions a job's runs
// made since first may be gone by now: Config.Retention from first, less
// a margin for the clocks of the worker and the store.
func (m *Middleware) pastRetention(first, now time.Time) bool {
	r := m.cfg.Retention
	if r < 0 {
		return false
	}
	return !now.Before(first.Add(r - min(r/10, time.Minute)))
}

// write stores rep in the job's metadata; River merges it when the run
// ends, whatever the verb.
func (m *Middleware) write(ctx context.Context, rep Report) {
	// MetadataSet fails only outside a work context, where there is no job
	// to write into.
	_ = river.MetadataSet(ctx, MetadataKey, rep)
}

// spread draws the random extra time of one snooze.
func (m *Middleware) spread() time.Duration {
	if m.cfg.SnoozeSpread <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(m.cfg.SnoozeSpread) + 1))
}

// isRiverVerb reports whether the worker returned a River snooze or cancel
// of its own.
func isRiverVerb(err error) bool {
	var snooze *rivertype.JobSnoozeError
	var cancel *rivertype.JobCancelError
	return errors.As(err, &snooze) || errors.As(err, &cancel)
}
