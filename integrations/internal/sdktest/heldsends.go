package sdktest

import (
	"context"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/ledger"
)

// HeldSends is the flow a Reconciler of a provider without keys must pass:
// a send whose answer was lost is held, reconciled as completed (the
// effect exists) and replayed on the next run; a send cut before the
// provider got it is held, left uncertain inside the settle time (a
// crashed send may still be applied), failed after it, and sent once more
// on the next run. Effects counts at the fake provider.
type HeldSends struct {
	Store      ledger.Store
	Reconciler ledger.Reconciler
	// Tenant and Operation name the actions that Send makes.
	Tenant, Operation string
	// Send runs the worker once for the action keyed key and returns what
	// Next told it.
	Send func(t *testing.T, key string) retrybudget.Step
	// Lose makes the provider apply its next request and cut the
	// connection instead of answering; Drop makes it cut the connection
	// before applying anything.
	Lose, Drop func()
	// Effects is the number of effects the provider applied.
	Effects func() int
	// Settle is the settle time of the route and the Reconciler; Advance
	// moves the clock that the Store and the Reconciler read.
	Settle  time.Duration
	Advance func(time.Duration)
}

// Run runs the flow: lost and cut are the keys of the two actions, and
// before is the number of effects already applied.
func (h HeldSends) Run(t *testing.T, lost, cut string, before int) {
	t.Helper()
	send := func(key string, want retrybudget.Step, what string) {
		t.Helper()
		if step := h.Send(t, key); step != want {
			t.Fatalf("%s: step %v, want %v", what, step, want)
		}
	}
	reconcile := func(key string) string {
		t.Helper()
		k := ledger.Key{Tenant: h.Tenant, Operation: h.Operation, Key: key}
		rec, err := h.Store.Get(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		done := ledger.Reconcile(context.Background(), h.Store, h.Reconciler, []ledger.Record{rec}, "operator")
		if len(done) != 1 || done[0].Err != nil {
			t.Fatalf("Reconcile = %+v", done)
		}
		return done[0].Result()
	}
	effects := func(want int, what string) {
		t.Helper()
		if got := h.Effects(); got != want {
			t.Fatalf("%s: %d effects at the provider, want %d", what, got, want)
		}
	}

	h.Lose()
	send(lost, retrybudget.StepHold, "lost answer")
	if got := reconcile(lost); got != "completed" {
		t.Fatalf("lost answer: reconciled %s, want completed (the effect exists)", got)
	}
	send(lost, retrybudget.StepDone, "rerun after completion (replayed)")
	effects(before+1, "after the lost answer")

	h.Drop()
	send(cut, retrybudget.StepHold, "cut send")
	if got := reconcile(cut); got == "failed" || got == "completed" {
		t.Fatalf("cut send inside the settle time: reconciled %s, want it left uncertain", got)
	}
	h.Advance(h.Settle + time.Second)
	if got := reconcile(cut); got != "failed" {
		t.Fatalf("cut send after the settle time: reconciled %s, want failed", got)
	}
	send(cut, retrybudget.StepDone, "rerun after failed")
	effects(before+2, "after the cut send: one per action")
}

// SettledRoutes returns routes pointed at url, each with the settle time
// settle, as a preset for the provider would carry it.
func SettledRoutes(routes []retrybudget.Route, url string, settle time.Duration) []retrybudget.Route {
	out := make([]retrybudget.Route, len(routes))
	for i, r := range routes {
		out[i] = r.At(url)
		out[i].Config.SettleTime = settle
	}
	return out
}
