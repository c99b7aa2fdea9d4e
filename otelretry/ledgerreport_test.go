package otelretry_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/otelretry"
)

// TestLedgerReport records two sweeps, through LedgerReport and through
// the Observer's Sweep field, which must be one and the same recording.
func TestLedgerReport(t *testing.T) {
	for name, report := range map[string]func(*otelretry.Telemetry) func(ledger.SweepReport){
		"LedgerReport":     func(t *otelretry.Telemetry) func(ledger.SweepReport) { return t.LedgerReport },
		"Observer().Sweep": func(t *otelretry.Telemetry) func(ledger.SweepReport) { return t.Observer().Sweep },
	} {
		t.Run(name, func(t *testing.T) { testLedgerReport(t, report) })
	}
}

func testLedgerReport(t *testing.T, report func(*otelretry.Telemetry) func(ledger.SweepReport)) {
	h := newHarness(t, otelretry.Config{})
	report(h.tel)(ledger.SweepReport{
		InProgress: 2, Uncertain: 1,
		Reconciled: []ledger.Reconciled{
			{Verdict: ledger.VerdictReconcile, State: ledger.StateCompleted},
			{Verdict: ledger.VerdictReconcile, State: ledger.StateFailed},
			{Verdict: ledger.VerdictPending, State: ledger.StateInProgress},
			{Verdict: ledger.VerdictReconcile, State: ledger.StateUncertain, Err: errors.New("provider down")},
		},
	})
	report(h.tel)(ledger.SweepReport{Err: errors.New("redis down")})
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

// TestLedgerExpired runs one action twice through a Transport whose ledger
// keeps records an hour, the second time 90 minutes later: the second call
// runs as a new action and counts one retrybudget.ledger.expired.
func TestLedgerExpired(t *testing.T) {
	h := newHarness(t, otelretry.Config{})
	srv := server(t, "201")
	var mu sync.Mutex
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	tr := retrybudget.New(retrybudget.Config{
		Base: srv.Client().Transport,
		Ledger: retrybudget.LedgerConfig{Store: ledger.NewMemory(ledger.MemoryConfig{
			Config: ledger.Config{Retention: time.Hour}, Now: clock})},
		Observer: h.tel.Observer(),
	})
	ctx := retrybudget.WithAction(context.Background(), retrybudget.Action{Tenant: "acme", Operation: "charge", Key: "order-1"})
	for range 2 {
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/charges", strings.NewReader(`{"amount":100}`))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		mu.Lock()
		now = now.Add(90 * time.Minute)
		mu.Unlock()
	}
	ms := h.metrics(t)
	if got := count(t, ms, "retrybudget.ledger.expired", otelretry.OperationKey.String("charge")); got != 1 {
		t.Fatalf("expired = %d; want 1", got)
	}
	if got := count(t, ms, "retrybudget.ledger.replays"); got != 0 {
		t.Fatalf("replays = %d; want 0: an expired record is not replayed", got)
	}
}
