package ledger

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/fakeclock"
)

// TestMonitorReportsAndReconciles drives two sweeps by hand: the first
// reports the stuck and uncertain actions and reconciles them, the second
// finds nothing left.
func TestMonitorReportsAndReconciles(t *testing.T) {
	clock := fakeclock.New(time.Unix(1000, 0))
	s := NewMemory(MemoryConfig{Now: clock.Now})
	ctx := t.Context()
	stuck, _ := s.Reserve(ctx, ReserveRequest{Key: Key{Key: "stuck"}, Fingerprint: fpA, Lease: time.Second})
	unc, _ := s.Reserve(ctx, ReserveRequest{Key: Key{Key: "uncertain"}, Fingerprint: fpA, Lease: time.Hour})
	if err := s.Fail(ctx, Key{Key: "uncertain"}, unc.Token, Failure{EffectPossible: true}); err != nil {
		t.Fatal(err)
	}
	s.Reserve(ctx, ReserveRequest{Key: Key{Key: "alive"}, Fingerprint: fpA, Lease: time.Hour})
	clock.Advance(2 * time.Second)
	_ = stuck

	ticks := make(chan time.Time)
	reports := make(chan SweepReport)
	m := monitor(ctx, MonitorConfig{
		Store: s,
		Reconciler: func(context.Context, Record) (Resolution, error) {
			return Resolution{State: StateFailed, Reason: "never happened"}, nil
		},
		Report: func(r SweepReport) { reports <- r },
	}, func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} })
	defer m.Stop()

	ticks <- time.Time{}
	r := <-reports
	if r.Err != nil || r.InProgress != 1 || r.Uncertain != 1 || len(r.Reconciled) != 2 {
		t.Fatalf("first sweep %+v", r)
	}
	for _, rc := range r.Reconciled {
		if rc.Verdict != VerdictReconcile || rc.State != StateFailed || rc.Err != nil {
			t.Fatalf("reconciled %+v", rc)
		}
	}
	ticks <- time.Time{}
	if r := <-reports; len(r.Stuck) != 0 || len(r.Reconciled) != 0 {
		t.Fatalf("second sweep %+v", r)
	}
}

func TestMonitorStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	m := Monitor(ctx, MonitorConfig{Store: NewMemory(MemoryConfig{}), Every: time.Hour})
	cancel()
	m.Stop()
}

// TestReconciledResult pins the words monitors, logs and metrics use for a
// reconciliation: the settled state, skipped or error.
func TestReconciledResult(t *testing.T) {
	for _, c := range []struct {
		rc   Reconciled
		want string
	}{
		{Reconciled{Verdict: VerdictReconcile, State: StateCompleted}, "completed"},
		{Reconciled{Verdict: VerdictReconcile, State: StateFailed}, "failed"},
		{Reconciled{Verdict: VerdictReconcile, State: StateUncertain}, "uncertain"},
		{Reconciled{Verdict: VerdictPending, State: StateInProgress}, "skipped"},
		{Reconciled{Verdict: VerdictRetry, State: StateFailed}, "failed"},
		{Reconciled{Verdict: VerdictReconcile, State: StateUncertain, Err: errors.New("provider down")}, "error"},
		{Reconciled{Err: errors.New("store down")}, "error"},
	} {
		if got := c.rc.Result(); got != c.want {
			t.Errorf("%+v: Result() = %q; want %q", c.rc, got, c.want)
		}
	}
}
