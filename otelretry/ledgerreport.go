package otelretry

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/retrybudget/retrybudget/ledger"
)

// LedgerStateKey is the ledger state of a stuck or reconciled action:
// in-progress, uncertain, completed, failed; "skipped" for an action
// another owner took over before the reconciler reached it, "error" for a
// reconciliation that failed.
const LedgerStateKey = attribute.Key("retrybudget.ledger.state")

// LedgerReport records a ledger sweep; it is the Sweep field of
// t.Observer(), to pass as ledger.Monitor's MonitorConfig.Report directly
// or through retrybudget.Observers: the gauge retrybudget.ledger.stuck by state, and
// one retrybudget.ledger.reconciled per reconciled action by the state it
// was settled in, so stuck operations and reconciliations are visible
// without calling Sweep by hand. A failed sweep counts as a ledger error
// (retrybudget.ledger.errors, op "sweep"); one that skipped records it
// could not decode (an error wrapping ledger.ErrCorrupt) counts one too,
// and what it listed is still recorded.
func (t *Telemetry) LedgerReport(r ledger.SweepReport) {
	ctx := context.Background()
	if r.Err != nil {
		t.m.ledgerErrors.Add(ctx, 1, metric.WithAttributes(LedgerOpKey.String("sweep")))
		if !errors.Is(r.Err, ledger.ErrCorrupt) {
			return
		}
	}
	t.m.stuck.Record(ctx, int64(r.InProgress), metric.WithAttributes(LedgerStateKey.String(ledger.StateInProgress.String())))
	t.m.stuck.Record(ctx, int64(r.Uncertain), metric.WithAttributes(LedgerStateKey.String(ledger.StateUncertain.String())))
	for _, rc := range r.Reconciled {
		t.m.reconciled.Add(ctx, 1, metric.WithAttributes(LedgerStateKey.String(rc.Result())))
	}
}
