package slogretry_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/internal/fakeclock"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/slogretry"
)

// stuckLedger returns a Memory ledger on a fake clock holding an action in
// progress whose lease ran out ("stuck"), an uncertain one ("uncertain")
// and a live one ("alive").
func stuckLedger(t *testing.T) *ledger.Memory {
	t.Helper()
	clock := fakeclock.New(time.Unix(1_000_000, 0))
	s := ledger.NewMemory(ledger.MemoryConfig{Now: clock.Now})
	ctx := t.Context()
	for _, k := range []string{"stuck", "uncertain", "alive"} {
		lease := time.Hour
		if k == "stuck" {
			lease = time.Second
		}
		res, err := s.Reserve(ctx, ledger.ReserveRequest{Key: sweepKey(k), Fingerprint: "fp", Owner: "worker-1", Lease: lease})
		if err != nil {
			t.Fatal(err)
		}
		if k == "uncertain" {
			if err := s.Fail(ctx, sweepKey(k), res.Token, ledger.Failure{EffectPossible: true}); err != nil {
				t.Fatal(err)
			}
		}
	}
	clock.Advance(2 * time.Second)
	return s
}

func sweepKey(k string) ledger.Key { return ledger.Key{Tenant: "acme", Operation: "charge", Key: k} }

// TestObserverSweep logs a sweep whose reconciler settles one stuck
// action and fails on the other: a Warn summary with the counts, an Info
// record for the settled action, a Warn one with the error for the other,
// actions named by hash only; then a clean sweep at Debug and a failed one
// at Error.
func TestObserverSweep(t *testing.T) {
	s := stuckLedger(t)
	var rec logRecorder
	ids := retrybudget.Identities{ActionKey: []byte("log-action-key-of-the-deployment")}
	obs := slogretry.Observer(rec.logger(), ids)
	obs.Sweep(ledger.SweepOnce(t.Context(), ledger.MonitorConfig{Store: s,
		Reconciler: func(_ context.Context, r ledger.Record) (ledger.Resolution, error) {
			if r.Key.Key == "stuck" {
				return ledger.Resolution{State: ledger.StateCompleted, Outcome: ledger.Outcome{Status: 201}}, nil
			}
			return ledger.Resolution{}, errors.New("provider down")
		}}))
	obs.Sweep(ledger.SweepOnce(t.Context(), ledger.MonitorConfig{Store: s,
		Reconciler: func(context.Context, ledger.Record) (ledger.Resolution, error) {
			return ledger.Resolution{State: ledger.StateCompleted}, nil
		}})) // the uncertain action was recorded uncertain again: still listed
	obs.Sweep(ledger.SweepReport{})
	obs.Sweep(ledger.SweepReport{Err: errors.New("redis down")})

	var got []string
	for _, r := range rec.records(t) {
		delete(r, "time")
		if _, ok := r["tenant"]; ok {
			t.Errorf("tenant logged without ShowIdentities: %v", r)
		}
		got = append(got, fmt.Sprint(r))
	}
	stuck, unc := ids.ActionID(sweepKey("stuck")), ids.ActionID(sweepKey("uncertain"))
	want := []string{
		"map[in_progress:1 level:WARN msg:retrybudget: ledger sweep reconciled:map[completed:1 error:1] uncertain:1]",
		"map[action:" + stuck + " lease_until:" + time.Unix(1_000_001, 0).Format(time.RFC3339) + " level:INFO msg:retrybudget: ledger stuck action operation:charge owner:worker-1 reconciled:completed state:in-progress]",
		"map[action:" + unc + " error:provider down level:WARN msg:retrybudget: ledger stuck action operation:charge owner:worker-1 reconciled:error state:uncertain]",
		"map[in_progress:0 level:WARN msg:retrybudget: ledger sweep reconciled:map[completed:1] uncertain:1]",
		"map[action:" + unc + " level:INFO msg:retrybudget: ledger stuck action operation:charge owner:monitor reconciled:completed state:uncertain]",
		"map[in_progress:0 level:DEBUG msg:retrybudget: ledger sweep uncertain:0]",
		"map[error:redis down level:ERROR msg:retrybudget: ledger sweep failed]",
	}
	slices.Sort(got) // Sweep lists in no particular order
	slices.Sort(want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("records\n%q\nwant\n%q", got, want)
	}
}

// TestObserverSweepShowsIdentities pins that a stuck action's tenant
// and key are logged only with Identities.ShowIdentities.
func TestObserverSweepShowsIdentities(t *testing.T) {
	var rec logRecorder
	slogretry.Observer(rec.logger(), retrybudget.Identities{ShowIdentities: true}).
		Sweep(ledger.SweepOnce(t.Context(), ledger.MonitorConfig{Store: stuckLedger(t)}))
	n := 0
	for _, r := range rec.records(t) {
		if r["msg"] == "retrybudget: ledger stuck action" {
			n++
			if r["tenant"] != "acme" || (r["action_key"] != "stuck" && r["action_key"] != "uncertain") {
				t.Errorf("record %v; want tenant and action_key", r)
			}
		}
	}
	if n != 2 {
		t.Fatalf("%d stuck action records; want 2\n%s", n, rec.text())
	}
}

// TestMonitorReportsToObserver wires a running ledger.Monitor to an
// Observer through MonitorConfig.Report, the documented wiring: every
// Observer combined with Observers sees the sweep.
func TestMonitorReportsToObserver(t *testing.T) {
	var rec logRecorder
	reports := make(chan ledger.SweepReport, 1)
	obs := slogretry.Observer(rec.logger()).Join(retrybudget.Observer{
		Sweep: func(r ledger.SweepReport) {
			select {
			case reports <- r:
			default: // the test reads the first report only
			}
		},
	})
	m := ledger.Monitor(t.Context(), ledger.MonitorConfig{Store: stuckLedger(t), Every: time.Millisecond, Report: obs.Sweep})
	r := <-reports
	m.Stop()
	if r.InProgress != 1 || r.Uncertain != 1 {
		t.Fatalf("report %+v; want 1 in progress, 1 uncertain", r)
	}
	found := false
	for _, l := range rec.records(t) {
		found = found || (l["msg"] == "retrybudget: ledger sweep" && l["level"] == "WARN")
	}
	if !found {
		t.Fatalf("no ledger sweep record logged\n%s", rec.text())
	}
}

// ExampleObserver_sweep logs a ledger sweep that finds an uncertain
// action. In production the Monitor calls Sweep every period:
//
//	m := ledger.Monitor(ctx, ledger.MonitorConfig{Store: store, Reconciler: fn, Report: obs.Sweep})
//	defer m.Stop()
func ExampleObserver_sweep() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	ctx := context.Background()
	store := ledger.NewMemory(ledger.MemoryConfig{})
	k := ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-7"}
	res, _ := store.Reserve(ctx, ledger.ReserveRequest{Key: k, Fingerprint: "fp", Owner: "worker-1"})
	store.Fail(ctx, k, res.Token, ledger.Failure{EffectPossible: true, Reason: "timeout after send"})

	// ActionKey names actions in the logs by a keyed hash: a per-deployment
	// secret, from the environment, never the code.
	ids := retrybudget.Identities{ActionKey: []byte("log-action-key-of-the-deployment")}
	obs := slogretry.Observer(logger, ids) // .Join(tel.Observer()), otelretry's
	obs.Sweep(ledger.SweepOnce(ctx, ledger.MonitorConfig{Store: store}))
	// Output:
	// level=WARN msg="retrybudget: ledger sweep" in_progress=0 uncertain=1
	// level=WARN msg="retrybudget: ledger stuck action" operation=charge action=64cbae0a0976eb7c state=uncertain owner=worker-1
}

// A sweep that skipped a record it could not decode still reports the
// stuck actions it listed, after the error.
func TestObserverSweepWithASkippedRecord(t *testing.T) {
	var rec logRecorder
	obs := slogretry.Observer(rec.logger())
	obs.Sweep(ledger.SweepReport{Err: fmt.Errorf("%w: 1 record skipped", ledger.ErrCorrupt),
		Stuck: []ledger.Record{{Key: sweepKey("stuck"), State: ledger.StateUncertain}}, Uncertain: 1})
	var msgs []string
	for _, r := range rec.records(t) {
		msgs = append(msgs, fmt.Sprint(r["msg"]))
	}
	want := []string{"retrybudget: ledger sweep failed", "retrybudget: ledger sweep", "retrybudget: ledger stuck action"}
	if !reflect.DeepEqual(msgs, want) {
		t.Fatalf("records %q; want %q", msgs, want)
	}
}
