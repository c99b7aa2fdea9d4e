package integrations_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/integrations"
	"github.com/retrybudget/retrybudget/ledger"
)

// TestLookupReconcilerIsSafeByConstruction: one exact match completes the
// action; no match fails it (so it is sent again) only once the settle
// time has passed since its last send; several matches, an error, or no
// match inside the settle time leave it uncertain.
func TestLookupReconcilerIsSafeByConstruction(t *testing.T) {
	created := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	rec := ledger.Record{
		Key:       ledger.Key{Tenant: "t", Operation: "sms", Key: "order-1"},
		State:     ledger.StateUncertain,
		CreatedAt: created,
		Attempts: []ledger.Attempt{
			{N: 1, At: created, Class: "created"},
			{N: 2, At: created.Add(2 * time.Second), Class: "timeout"},
			// An earlier reconciler's grant sent nothing: the settle
			// time still runs from the send before it.
			{N: 3, At: created.Add(25 * time.Second), Class: "reconcile"},
		},
	}
	msg := ledger.Outcome{Status: 201, Body: []byte(`{"sid":"SM1"}`)}
	lost := errors.New("lookup failed")
	for _, tc := range []struct {
		name  string
		found []ledger.Outcome
		err   error
		at    time.Duration // after the record's creation
		want  ledger.State
	}{
		{"one match", []ledger.Outcome{msg}, nil, time.Second, ledger.StateCompleted},
		{"two matches", []ledger.Outcome{msg, msg}, nil, time.Hour, ledger.StateUncertain},
		{"none inside the settle time", nil, nil, 2*time.Second + 29*time.Second, ledger.StateUncertain},
		{"none after the settle time", nil, nil, 2*time.Second + 30*time.Second, ledger.StateFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := func() time.Time { return created.Add(tc.at) }
			rc := integrations.LookupReconciler(func(context.Context, ledger.Record) ([]ledger.Outcome, error) {
				return tc.found, tc.err
			}, 30*time.Second, now)
			res, err := rc(context.Background(), rec)
			if err != nil {
				t.Fatal(err)
			}
			if res.State != tc.want {
				t.Fatalf("State = %s (%q), want %s", res.State, res.Reason, tc.want)
			}
			if tc.want == ledger.StateCompleted && string(res.Outcome.Body) != `{"sid":"SM1"}` {
				t.Fatalf("Outcome = %q, want the match", res.Outcome.Body)
			}
		})
	}
	t.Run("lookup error", func(t *testing.T) {
		rc := integrations.LookupReconciler(func(context.Context, ledger.Record) ([]ledger.Outcome, error) {
			return nil, lost
		}, 0, nil)
		if _, err := rc(context.Background(), rec); !errors.Is(err, lost) {
			t.Fatalf("err = %v, want the lookup's error", err)
		}
	})
	t.Run("the store's SettleUntil is kept", func(t *testing.T) {
		later := rec
		later.SettleUntil = created.Add(time.Hour)
		now := func() time.Time { return created.Add(time.Minute) }
		rc := integrations.LookupReconciler(func(context.Context, ledger.Record) ([]ledger.Outcome, error) {
			return nil, nil
		}, 30*time.Second, now)
		res, err := rc(context.Background(), later)
		if err != nil || res.State != ledger.StateUncertain {
			t.Fatalf("State = %s, %v; want uncertain before the record's SettleUntil", res.State, err)
		}
	})
	t.Run("zero settle is the lease", func(t *testing.T) {
		now := func() time.Time { return created.Add(2*time.Second + ledger.DefaultLease - time.Millisecond) }
		rc := integrations.LookupReconciler(func(context.Context, ledger.Record) ([]ledger.Outcome, error) {
			return nil, nil
		}, 0, now)
		res, err := rc(context.Background(), rec)
		if err != nil || res.State != ledger.StateUncertain {
			t.Fatalf("State = %s, %v; want uncertain just inside DefaultLease", res.State, err)
		}
	})
}
