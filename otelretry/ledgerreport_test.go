package otelretry_test

import (
	"errors"
	"testing"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/otelretry"
)

func TestLedgerReport(t *testing.T) {
	h := newHarness(t, otelretry.Config{})
	h.tel.LedgerReport(ledger.SweepReport{
		InProgress: 2, Uncertain: 1,
		Reconciled: []ledger.Reconciled{
			{Verdict: ledger.VerdictReconcile, State: ledger.StateCompleted},
			{Verdict: ledger.VerdictReconcile, State: ledger.StateFailed},
			{Verdict: ledger.VerdictPending, State: ledger.StateInProgress},
			{Verdict: ledger.VerdictReconcile, State: ledger.StateUncertain, Err: errors.New("provider down")},
		},
	})
	h.tel.LedgerReport(ledger.SweepReport{Err: errors.New("redis down")})
	ms := h.metrics(t)
	for _, c := range []struct {
		state string
		want  int64
	}{{"completed", 1}, {"failed", 1}, {"skipped", 1}, {"error", 1}} {
		if got := count(t, ms, "retrybudget.ledger.reconciled", otelretry.LedgerStateKey.String(c.state)); got != c.want {
			t.Errorf("reconciled %s = %d, want %d", c.state, got, c.want)
		}
	}
	if got := count(t, ms, "retrybudget.ledger.errors", otelretry.LedgerOpKey.String("sweep")); got != 1 {
		t.Errorf("sweep errors = %d", got)
	}
	g, ok := ms["retrybudget.ledger.stuck"]
	if !ok {
		t.Fatal("no retrybudget.ledger.stuck gauge")
	}
	got := map[string]int64{}
	for _, dp := range g.Data.(metricdata.Gauge[int64]).DataPoints {
		v, _ := dp.Attributes.Value(otelretry.LedgerStateKey)
		got[v.AsString()] = dp.Value
	}
	if got["in-progress"] != 2 || got["uncertain"] != 1 {
		t.Fatalf("stuck gauge %v", got)
	}
}
