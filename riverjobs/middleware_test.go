package riverjobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/limiter"
	"github.com/retrybudget/retrybudget/riverjobs"
	"github.com/retrybudget/retrybudget/riverjobs/internal/fakeprovider"
)

const eventWait = 20 * time.Second

// A job that charged, then failed on its own (as if its worker died after
// the provider answered), is run again by River: the ledger replays the
// charge, so the provider applies it once and the job completes.
func TestJobRunTwiceIsReplayedNotCharged(t *testing.T) {
	failed := false
	h := newHarness(t, harnessOpts{after: func(job *river.Job[PaymentArgs]) error {
		if !failed {
			failed = true // one worker goroutine runs this job at a time
			return errors.New("worker's database down after the charge")
		}
		return nil
	}})
	job := h.insert(t, PaymentArgs{Tenant: "acme", Order: "o-1", Amount: 100}, nil)
	h.await(t, job.ID, eventWait, river.EventKindJobCompleted)

	if s := h.provider.Stats(); s.PerOrder["o-1"] != 1 || s.Arrivals != 1 {
		t.Errorf("provider: effects %d, arrivals %d; want 1 and 1 (the second run replayed)", s.PerOrder["o-1"], s.Arrivals)
	}
	got := h.job(t, job.ID)
	r := report(t, got)
	if r.Verb != "completed" || !r.Replayed || r.Runs != 2 || r.TotalAttempts != 1 {
		t.Errorf("report = %+v; want completed, replayed, 2 runs, 1 attempt in all", r)
	}
	if r.Tenant != "acme" || r.Operation != "payment" || r.ActionKey != "o-1" {
		t.Errorf("report action = %q/%q/%q; want acme/payment/o-1", r.Tenant, r.Operation, r.ActionKey)
	}
	want := retrybudget.Action{Tenant: "acme", Operation: "payment", Key: "o-1"}.IdempotencyKey()
	if r.Key != want {
		t.Errorf("report key = %q; want the Action's key %q", r.Key, want)
	}
	if got.Attempt != 2 {
		t.Errorf("River attempt = %d; want 2", got.Attempt)
	}
}

// A job River retries after the ledger's retention, counted from its first
// run, is held instead of run: the record of its charge may be gone, and
// the ledger would send it again as new. (Retention and the lease are
// shortened so that River's first retry, about a second later, comes
// after it.)
func TestRetryPastRetentionIsHeldNotResent(t *testing.T) {
	const retention = 500 * time.Millisecond
	store := ledger.NewMemory(ledger.MemoryConfig{Config: ledger.Config{Retention: retention}})
	failed := false
	h := newHarness(t, harnessOpts{
		transport: retrybudget.Config{Ledger: retrybudget.LedgerConfig{Store: store, Lease: 100 * time.Millisecond}},
		mw:        riverjobs.Config{Retention: retention},
		after: func(job *river.Job[PaymentArgs]) error {
			if !failed {
				failed = true // one worker goroutine runs this job at a time
				return errors.New("worker's database down after the charge")
			}
			return nil
		},
	})
	job := h.insert(t, PaymentArgs{Tenant: "acme", Order: "o-late", Amount: 100}, nil)
	ev := h.await(t, job.ID, eventWait, river.EventKindJobCancelled, river.EventKindJobCompleted)
	if s := h.provider.Stats(); s.Arrivals != 1 {
		t.Errorf("provider arrivals %d; want 1: the retry past the retention sent the charge again", s.Arrivals)
	}
	r := report(t, ev.Job)
	if ev.Kind != river.EventKindJobCancelled || r.Verb != "held" || !strings.Contains(r.Reason, riverjobs.ErrPastRetention.Error()) {
		t.Errorf("%s, report %+v; want held past the retention", ev.Kind, r)
	}
	if r.Runs != 2 || r.FirstRun.IsZero() || !r.At.After(r.FirstRun.Add(retention/2)) {
		t.Errorf("report runs %d, first run %v, at %v; want the second run, past the retention", r.Runs, r.FirstRun, r.At)
	}
}

// Two jobs for one order (inserted twice by the application) are one
// Action: one charge, and the second job completes as a replay.
func TestTwoJobsOneOrderChargeOnce(t *testing.T) {
	h := newHarness(t, harnessOpts{workers: 1})
	a := h.insert(t, PaymentArgs{Tenant: "acme", Order: "o-2", Amount: 5}, nil)
	h.await(t, a.ID, eventWait, river.EventKindJobCompleted)
	b := h.insert(t, PaymentArgs{Tenant: "acme", Order: "o-2", Amount: 5}, nil)
	h.await(t, b.ID, eventWait, river.EventKindJobCompleted)
	if n := h.provider.Stats().PerOrder["o-2"]; n != 1 {
		t.Errorf("effects = %d; want 1", n)
	}
	if r := report(t, h.job(t, b.ID)); !r.Replayed {
		t.Errorf("second job's report = %+v; want replayed", r)
	}
}

// A Retry-After longer than MaxWait snoozes the job until then: River's
// queue shows it scheduled at the provider's time, no attempt is burnt,
// and the metadata says why.
func TestLongRetryAfterSnoozesUntilRetryAt(t *testing.T) {
	h := newHarness(t, harnessOpts{transport: retrybudget.Config{MaxWait: 100 * time.Millisecond}})
	start := time.Now()
	h.provider.StartBurst(time.Minute)
	job := h.insert(t, PaymentArgs{Tenant: "acme", Order: "o-3", Amount: 1}, nil)
	h.await(t, job.ID, eventWait, river.EventKindJobSnoozed)

	got := h.job(t, job.ID)
	r := report(t, got)
	if got.State != rivertype.JobStateScheduled {
		t.Errorf("state = %s; want scheduled", got.State)
	}
	if r.Verb != "snoozed" || r.Class != "capacity" || r.RetryAt == nil || r.Status != 429 {
		t.Fatalf("report = %+v; want snoozed, capacity, 429, a retry-at", r)
	}
	if !strings.Contains(r.Reason, "longer than allowed") {
		t.Errorf("reason = %q; want the Transport's ErrWaitTooLong", r.Reason)
	}
	// The provider asked for about a minute; the job waits that long in
	// the queue, not in a worker goroutine.
	if d := got.ScheduledAt.Sub(start); d < 55*time.Second || d > 62*time.Second {
		t.Errorf("scheduled %v after insert; want about the minute the provider asked", d)
	}
	if got.ScheduledAt.Before(r.RetryAt.Add(-time.Millisecond)) {
		t.Errorf("scheduled_at %v before the report's retry_at %v", got.ScheduledAt, r.RetryAt)
	}
	if got.Attempt != 0 {
		t.Errorf("River attempt = %d; want 0 (a snooze burns none)", got.Attempt)
	}
	if n := h.provider.Stats().Effects; n != 0 {
		t.Errorf("effects = %d; want 0", n)
	}
}

// A business rejection cancels the job with the reason; it is never tried
// again.
func TestRejectionCancelsWithReason(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	job := h.insert(t, PaymentArgs{Tenant: "acme", Order: "o-4", Amount: -1}, nil)
	h.await(t, job.ID, eventWait, river.EventKindJobCancelled)
	got := h.job(t, job.ID)
	r := report(t, got)
	if r.Verb != "cancelled" || r.Class != "business" || r.Status != 422 || r.Attempts != 1 {
		t.Errorf("report = %+v; want cancelled, business, 422, 1 attempt", r)
	}
	if len(got.Errors) != 1 || !strings.Contains(got.Errors[0].Error, "status 422") {
		t.Errorf("River errors = %+v; want the worker's reason", got.Errors)
	}
}

// One order asked for twice with different amounts is a conflict: the
// second job is cancelled, and nothing more is charged.
func TestConflictCancels(t *testing.T) {
	h := newHarness(t, harnessOpts{workers: 1})
	a := h.insert(t, PaymentArgs{Tenant: "acme", Order: "o-5", Amount: 10}, nil)
	h.await(t, a.ID, eventWait, river.EventKindJobCompleted)
	b := h.insert(t, PaymentArgs{Tenant: "acme", Order: "o-5", Amount: 99}, nil)
	h.await(t, b.ID, eventWait, river.EventKindJobCancelled)
	r := report(t, h.job(t, b.ID))
	if r.Verb != "cancelled" || !strings.Contains(r.Reason, retrybudget.ErrConflict.Error()) {
		t.Errorf("report = %+v; want cancelled for a conflict", r)
	}
	if n := h.provider.Stats().PerOrder["o-5"]; n != 1 {
		t.Errorf("effects = %d; want 1", n)
	}
}

// An action whose outcome is uncertain (an earlier owner may have charged,
// no Reconciler, keys not declared honoured) is held: cancelled with
// ErrHeld and its identity in the metadata, and never sent.
func TestUncertainIsHeldNotResent(t *testing.T) {
	store := ledger.NewMemory(ledger.MemoryConfig{})
	h := newHarness(t, harnessOpts{transport: retrybudget.Config{Ledger: retrybudget.LedgerConfig{Store: store}}})
	key := ledger.Key{Tenant: "acme", Operation: "payment", Key: "o-6"}
	ctx := context.Background()
	// The same request as the job's: only the outcome is unknown.
	body, _ := json.Marshal(fakeprovider.Charge{Order: "o-6", Amount: 1})
	u, _ := url.Parse(h.provider.URL + "/charges")
	fp := ledger.Fingerprint(http.MethodPost, u, nil, nil, body)
	res, err := store.Reserve(ctx, ledger.ReserveRequest{Key: key, Fingerprint: fp, Owner: "dead worker"})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Fail(ctx, key, res.Token, ledger.Failure{EffectPossible: true, Reason: "lost response"}); err != nil {
		t.Fatal(err)
	}
	job := h.insert(t, PaymentArgs{Tenant: "acme", Order: "o-6", Amount: 1}, nil)
	h.await(t, job.ID, eventWait, river.EventKindJobCancelled)
	got := h.job(t, job.ID)
	r := report(t, got)
	if r.Verb != "held" || r.ActionKey != "o-6" || r.Tenant != "acme" || r.Class != "transport-maybe-sent" {
		t.Errorf("report = %+v; want held with the action's identity", r)
	}
	if len(got.Errors) != 1 || !strings.Contains(got.Errors[0].Error, riverjobs.ErrHeld.Error()) {
		t.Errorf("River errors = %+v; want ErrHeld", got.Errors)
	}
	if n := h.provider.Stats().Arrivals; n != 0 {
		t.Errorf("provider arrivals = %d; want 0", n)
	}
}

// refuseFirst is a Limiter that refuses its first request for wait and
// allows every later one.
type refuseFirst struct {
	wait    time.Duration
	refused atomic.Bool
}

func (l *refuseFirst) Allow(context.Context, limiter.Request) (limiter.Decision, error) {
	if l.refused.CompareAndSwap(false, true) {
		return limiter.Decision{RetryAfter: l.wait, Reason: limiter.ReasonRate}, nil
	}
	return limiter.Decision{Allowed: true}, nil
}

func (l *refuseFirst) Cooldown(context.Context, string, time.Time) error { return nil }

// A job the rate limiter refused, whose run then outlasts the limiter's
// wait (its ledger and database work on a slow machine), is snoozed, not
// failed: nothing was sent and no River attempt is spent. Its next run
// passes the limiter and charges once.
func TestRateLimitedRunThatOutlastsItsWaitIsSnoozed(t *testing.T) {
	retryAts := make(chan time.Time, 1) // the limiter's retry-at, as the worker saw it
	h := newHarness(t, harnessOpts{
		transport: retrybudget.Config{Limiter: &refuseFirst{wait: 20 * time.Millisecond}, MaxWait: time.Millisecond},
		// The rest of the run takes until the limiter's time has passed.
		failed: func(err error) {
			var rbErr *retrybudget.Error
			if errors.As(err, &rbErr) {
				retryAts <- rbErr.Outcome.RetryAt
				time.Sleep(time.Until(rbErr.Outcome.RetryAt) + time.Millisecond)
			}
		},
	})
	job := h.insert(t, PaymentArgs{Tenant: "acme", Order: "o-passed", Amount: 1}, nil)
	ev := h.await(t, job.ID, eventWait, river.EventKindJobSnoozed, river.EventKindJobFailed)
	if ev.Kind != river.EventKindJobSnoozed {
		t.Fatalf("first run: %s; want snoozed (metadata %s)", ev.Kind, ev.Job.Metadata)
	}
	r := report(t, ev.Job)
	if r.Verb != "snoozed" || !strings.Contains(r.Reason, "rate limit") || r.RetryAt == nil {
		t.Fatalf("report = %+v; want snoozed by the rate limiter with a retry-at", r)
	}
	// The run outlasted the limiter's time: the job snoozes from when
	// it ended, not from a time already past.
	var retryAt time.Time
	select {
	case retryAt = <-retryAts:
	default:
		t.Fatal("the worker saw no retrybudget.Error from the refused call")
	}
	if retryAt.IsZero() || !r.At.After(retryAt) || r.RetryAt.Before(r.At) {
		t.Errorf("run ended %v, limiter's retry-at %v, snoozed until %v; want the run past the limiter's time and the snooze from its end", r.At, retryAt, r.RetryAt)
	}
	ev = h.await(t, job.ID, eventWait, river.EventKindJobCompleted, river.EventKindJobFailed)
	if ev.Kind != river.EventKindJobCompleted {
		t.Fatalf("second run: %s; want completed (metadata %s)", ev.Kind, ev.Job.Metadata)
	}
	if got := h.job(t, job.ID); got.Attempt != 1 || len(got.Errors) != 0 {
		t.Errorf("River attempt %d, errors %d; want 1 (the completing run; a snooze burns none), 0", got.Attempt, len(got.Errors))
	}
	if s := h.provider.Stats(); s.Effects != 1 || s.Arrivals != 1 {
		t.Errorf("provider effects %d, arrivals %d; want 1, 1", s.Effects, s.Arrivals)
	}
}

// A provider that keeps failing goes to River's retry, which counts an
// attempt, no sooner than the Transport's RetryAt.
func TestFailureRetriesNoSoonerThanRetryAt(t *testing.T) {
	h := newHarness(t, harnessOpts{
		faults: fakeprovider.Faults{Unavailable: 1},
		// One attempt per run; the backoff's next step is about an hour.
		transport: retrybudget.Config{MaxAttempts: -1, BaseDelay: time.Hour, MaxDelay: time.Hour, Jitter: -1},
	})
	start := time.Now()
	job := h.insert(t, PaymentArgs{Tenant: "acme", Order: "o-7", Amount: 1}, nil)
	h.await(t, job.ID, eventWait, river.EventKindJobFailed)
	got := h.job(t, job.ID)
	r := report(t, got)
	if r.Verb != "retried" || r.RetryAt == nil {
		t.Fatalf("report = %+v; want retried with a retry-at", r)
	}
	if got.State != rivertype.JobStateRetryable || got.Attempt != 1 {
		t.Errorf("state %s, attempt %d; want retryable, 1", got.State, got.Attempt)
	}
	// River's own first retry is about a second away; the floor moves it.
	if d := got.ScheduledAt.Sub(start); d < 59*time.Minute {
		t.Errorf("retry scheduled %v after insert; want the Transport's hour", d)
	}
}

// A job whose args name no key and that was not inserted unique is
// cancelled at once: without a stable key a second run could charge again.
func TestNoKeyCancels(t *testing.T) {
	h := newHarness(t, harnessOpts{mw: riverjobs.Config{KeyField: "missing"}})
	job := h.insert(t, PaymentArgs{Tenant: "acme", Order: "o-8", Amount: 1}, nil)
	h.await(t, job.ID, eventWait, river.EventKindJobCancelled)
	got := h.job(t, job.ID)
	if len(got.Errors) != 1 || !strings.Contains(got.Errors[0].Error, riverjobs.ErrNoActionKey.Error()) {
		t.Errorf("River errors = %+v; want ErrNoActionKey", got.Errors)
	}
	if n := h.provider.Stats().Arrivals; n != 0 {
		t.Errorf("provider arrivals = %d; want 0", n)
	}
}

// Without a key field, River's unique key names the action: a unique job
// is one Action.
func TestUniqueKeyNamesTheAction(t *testing.T) {
	h := newHarness(t, harnessOpts{mw: riverjobs.Config{TenantField: "tenant"}})
	job := h.insert(t, PaymentArgs{Tenant: "acme", Order: "o-9", Amount: 1}, &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}})
	h.await(t, job.ID, eventWait, river.EventKindJobCompleted)
	r := report(t, h.job(t, job.ID))
	if !strings.HasPrefix(r.ActionKey, "river:") || r.Verb != "completed" {
		t.Errorf("report = %+v; want completed under River's unique key", r)
	}
}
