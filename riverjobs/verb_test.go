package riverjobs_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/riverjobs"
)

func TestDecide(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	later := now.Add(time.Minute)
	gaveUp := func(reason error, cls retrybudget.Class, at time.Time) retrybudget.Outcome {
		return retrybudget.Outcome{Reason: reason, Class: cls, RetryAt: at, Attempts: 1}
	}
	asErr := func(o retrybudget.Outcome) error { return &retrybudget.Error{Outcome: o} }
	tests := []struct {
		name    string
		err     error
		o       retrybudget.Outcome // the recorded call's
		ok      bool
		snoozes int
		verb    riverjobs.Verb
		until   time.Time
	}{
		{name: "success", verb: riverjobs.VerbComplete},
		{name: "success after a give-up the worker accepted", o: gaveUp(retrybudget.ErrRejected, retrybudget.ClassBusiness, time.Time{}), ok: true, verb: riverjobs.VerbComplete},
		{name: "the worker's own snooze", err: river.JobSnooze(time.Second), verb: riverjobs.VerbWorker},
		{name: "the worker's own cancel", err: river.JobCancel(errors.New("no")), verb: riverjobs.VerbWorker},
		{name: "the worker's own snooze after a held call", err: river.JobSnooze(time.Minute),
			o: gaveUp(retrybudget.ErrUncertain, retrybudget.ClassMaybeSent, time.Time{}), ok: true, verb: riverjobs.VerbHold},
		{name: "the worker's own error", err: errors.New("db down"), verb: riverjobs.VerbRetry},
		{name: "own error after a successful call", err: errors.New("db down"), o: retrybudget.Outcome{Attempts: 1}, ok: true, verb: riverjobs.VerbRetry},
		{name: "Retry-After past MaxWait", err: asErr(gaveUp(retrybudget.ErrWaitTooLong, retrybudget.ClassCapacity, later)), verb: riverjobs.VerbSnooze, until: later},
		{name: "Retry-After past MaxWait, recorded", err: errors.New("status 429"), o: gaveUp(retrybudget.ErrWaitTooLong, retrybudget.ClassCapacity, later), ok: true, verb: riverjobs.VerbSnooze, until: later},
		{name: "backoff after repeated 503s past MaxWait", err: asErr(retrybudget.Outcome{Reason: retrybudget.ErrWaitTooLong,
			Class: retrybudget.ClassCapacity, RetryAt: later, Attempts: 3}), verb: riverjobs.VerbRetry, until: later},
		{name: "rate limiter", err: asErr(gaveUp(retrybudget.ErrRateLimited, retrybudget.ClassCapacity, later)), verb: riverjobs.VerbSnooze, until: later},
		{name: "held by another owner", err: asErr(gaveUp(retrybudget.ErrPending, retrybudget.ClassCapacity, later)), verb: riverjobs.VerbSnooze, until: later},
		{name: "budget refused the provider's time", err: asErr(gaveUp(retrybudget.ErrBudgetExhausted, retrybudget.ClassCapacity, later)), verb: riverjobs.VerbSnooze, until: later},
		{name: "too many snoozes", err: asErr(gaveUp(retrybudget.ErrRateLimited, retrybudget.ClassCapacity, later)), snoozes: riverjobs.DefaultMaxSnoozes, verb: riverjobs.VerbRetry, until: later},
		{name: "not-now time reached", err: asErr(gaveUp(retrybudget.ErrRateLimited, retrybudget.ClassCapacity, now)), verb: riverjobs.VerbSnooze, until: now},
		{name: "not-now time passed during the run", err: asErr(gaveUp(retrybudget.ErrRateLimited, retrybudget.ClassCapacity, now.Add(-time.Second))), verb: riverjobs.VerbSnooze, until: now},
		{name: "not-now without a time", err: asErr(gaveUp(retrybudget.ErrRateLimited, retrybudget.ClassCapacity, time.Time{})), verb: riverjobs.VerbRetry},
		{name: "held elsewhere, time passed during the run", err: asErr(gaveUp(retrybudget.ErrPending, retrybudget.ClassCapacity, now.Add(-time.Second))), verb: riverjobs.VerbSnooze, until: now},
		{name: "budget refused a provider time already past", err: asErr(gaveUp(retrybudget.ErrBudgetExhausted, retrybudget.ClassCapacity, now)), verb: riverjobs.VerbRetry, until: now},
		{name: "Retry-After past MaxWait, time passed during the run", err: asErr(gaveUp(retrybudget.ErrWaitTooLong, retrybudget.ClassCapacity, now.Add(-time.Second))), verb: riverjobs.VerbRetry, until: now.Add(-time.Second)},
		{name: "attempts exhausted on 503s", err: asErr(gaveUp(retrybudget.ErrAttemptsExhausted, retrybudget.ClassCapacity, later)), verb: riverjobs.VerbRetry, until: later},
		{name: "deadline", err: asErr(gaveUp(retrybudget.ErrDeadline, retrybudget.ClassServer, later)), verb: riverjobs.VerbRetry, until: later},
		{name: "ledger down", err: asErr(gaveUp(retrybudget.ErrLedger, retrybudget.ClassNotSent, time.Time{})), verb: riverjobs.VerbRetry},
		{name: "rejected", err: asErr(gaveUp(retrybudget.ErrRejected, retrybudget.ClassBusiness, time.Time{})), verb: riverjobs.VerbCancel},
		{name: "conflict", err: asErr(gaveUp(retrybudget.ErrConflict, retrybudget.ClassBusiness, time.Time{})), verb: riverjobs.VerbCancel},
		{name: "uncertain", err: asErr(gaveUp(retrybudget.ErrUncertain, retrybudget.ClassMaybeSent, time.Time{})), verb: riverjobs.VerbHold},
		{name: "a later call's rate limit after a held call", err: asErr(gaveUp(retrybudget.ErrRateLimited, retrybudget.ClassCapacity, later)), o: gaveUp(retrybudget.ErrUncertain, retrybudget.ClassMaybeSent, time.Time{}), ok: true, verb: riverjobs.VerbHold},
		{name: "uncertain, wrapped by the worker", err: fmt.Errorf("charge: %w", asErr(gaveUp(retrybudget.ErrUncertain, retrybudget.ClassMaybeSent, time.Time{}))), verb: riverjobs.VerbHold},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := riverjobs.Decide(riverjobs.Config{}, tt.err, tt.o, tt.ok, tt.snoozes, now, 0)
			if d.Verb != tt.verb || !d.Until.Equal(tt.until) {
				t.Errorf("Decide = %s until %v; want %s until %v", d.Verb, d.Until, tt.verb, tt.until)
			}
		})
	}
}

func TestDecideSnoozeSpread(t *testing.T) {
	now := time.Now()
	o := retrybudget.Outcome{Reason: retrybudget.ErrRateLimited, Class: retrybudget.ClassCapacity, RetryAt: now.Add(time.Second)}
	d := riverjobs.Decide(riverjobs.Config{}, o.Err(), o, true, 0, now, 40*time.Millisecond)
	if want := o.RetryAt.Add(40 * time.Millisecond); !d.Until.Equal(want) {
		t.Errorf("Until = %v; want RetryAt plus the spread, %v", d.Until, want)
	}
	if d.Outcome == nil || d.Outcome.Reason != retrybudget.ErrRateLimited {
		t.Errorf("Outcome = %+v; want the one decided on", d.Outcome)
	}
}

// A gated not-now time that passed during the run snoozes for the spread
// alone, from now.
func TestDecideSnoozeSpreadAfterAPassedTime(t *testing.T) {
	now := time.Now()
	o := retrybudget.Outcome{Reason: retrybudget.ErrRateLimited, Class: retrybudget.ClassCapacity, RetryAt: now.Add(-time.Second)}
	d := riverjobs.Decide(riverjobs.Config{}, o.Err(), o, true, 0, now, 40*time.Millisecond)
	if want := now.Add(40 * time.Millisecond); d.Verb != riverjobs.VerbSnooze || !d.Until.Equal(want) {
		t.Errorf("Decide = %s until %v; want snoozed until now plus the spread, %v", d.Verb, d.Until, want)
	}
}

func TestDecideNeverSnoozesWhenDisabled(t *testing.T) {
	now := time.Now()
	o := retrybudget.Outcome{Reason: retrybudget.ErrWaitTooLong, Class: retrybudget.ClassCapacity, RetryAt: now.Add(time.Hour)}
	if d := riverjobs.Decide(riverjobs.Config{MaxSnoozes: -1}, o.Err(), o, true, 0, now, 0); d.Verb != riverjobs.VerbRetry {
		t.Errorf("Verb = %s; want retried when MaxSnoozes < 0", d.Verb)
	}
}

func TestVerbString(t *testing.T) {
	for v, want := range map[riverjobs.Verb]string{
		riverjobs.VerbComplete: "completed", riverjobs.VerbSnooze: "snoozed", riverjobs.VerbCancel: "cancelled",
		riverjobs.VerbHold: "held", riverjobs.VerbRetry: "retried", riverjobs.VerbWorker: "worker", riverjobs.Verb(99): "unknown",
	} {
		if got := v.String(); got != want {
			t.Errorf("Verb(%d).String() = %q; want %q", int(v), got, want)
		}
	}
}

// A Retry-After of a century (hostile or broken) must not park a job for a
// century: a snooze, and the floor of River's retry, end at most MaxDelay
// after the run.
func TestDecideCapsHowFarAheadAJobRuns(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	century := now.Add(100 * 365 * 24 * time.Hour)
	tests := []struct {
		name   string
		cfg    riverjobs.Config
		reason error
		verb   riverjobs.Verb
		until  time.Time
	}{
		{name: "snooze, default cap", reason: retrybudget.ErrWaitTooLong, verb: riverjobs.VerbSnooze, until: now.Add(riverjobs.DefaultMaxDelay)},
		{name: "snooze, own cap", cfg: riverjobs.Config{MaxDelay: 5 * time.Minute}, reason: retrybudget.ErrRateLimited, verb: riverjobs.VerbSnooze, until: now.Add(5 * time.Minute)},
		{name: "retry floor, default cap", reason: retrybudget.ErrAttemptsExhausted, verb: riverjobs.VerbRetry, until: now.Add(riverjobs.DefaultMaxDelay)},
		{name: "negative cap is the default", cfg: riverjobs.Config{MaxDelay: -1}, reason: retrybudget.ErrWaitTooLong, verb: riverjobs.VerbSnooze, until: now.Add(riverjobs.DefaultMaxDelay)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := retrybudget.Outcome{Reason: tt.reason, Class: retrybudget.ClassCapacity, RetryAt: century, Attempts: 1}
			d := riverjobs.Decide(tt.cfg, o.Err(), o, true, 0, now, 0)
			if d.Verb != tt.verb || !d.Until.Equal(tt.until) {
				t.Fatalf("Decide = %v until %v; want %v until %v", d.Verb, d.Until, tt.verb, tt.until)
			}
		})
	}
	// A time within the cap is kept exactly.
	o := retrybudget.Outcome{Reason: retrybudget.ErrWaitTooLong, Class: retrybudget.ClassCapacity, RetryAt: now.Add(time.Minute), Attempts: 1}
	if d := riverjobs.Decide(riverjobs.Config{}, o.Err(), o, true, 0, now, 0); !d.Until.Equal(now.Add(time.Minute)) {
		t.Fatalf("Until = %v; want %v", d.Until, now.Add(time.Minute))
	}
}

func ExampleDecide() {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	// The provider asked for five minutes, more than the Transport's MaxWait.
	o := retrybudget.Outcome{Reason: retrybudget.ErrWaitTooLong, Class: retrybudget.ClassCapacity,
		Attempts: 1, StatusCode: 429, RetryAt: now.Add(5 * time.Minute)}
	d := riverjobs.Decide(riverjobs.Config{}, o.Err(), o, true, 0, now, 0)
	fmt.Println(d.Verb, d.Until.Sub(now))

	o = retrybudget.Outcome{Reason: retrybudget.ErrRejected, Class: retrybudget.ClassBusiness, Attempts: 1, StatusCode: 422}
	fmt.Println(riverjobs.Decide(riverjobs.Config{}, o.Err(), o, true, 0, now, 0).Verb)
	// Output:
	// snoozed 5m0s
	// cancelled
}

// Decide follows retrybudget.Next: an invalid Action is a final answer
// (cancelled), not a retry that can never succeed.
func TestDecideCancelsAnInvalidAction(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	o := retrybudget.Outcome{Reason: retrybudget.ErrInvalidAction, Class: retrybudget.ClassBusiness}
	if d := riverjobs.Decide(riverjobs.Config{}, o.Err(), o, true, 0, now, 0); d.Verb != riverjobs.VerbCancel {
		t.Fatalf("Decide = %v; want cancelled", d.Verb)
	}
}
