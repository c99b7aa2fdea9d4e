package sdktest

import (
	"context"
	"sync"
	"testing"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/ledger"
)

// routeLog records the Route named by every Observer event.
type routeLog struct {
	mu       sync.Mutex // guards the fields below
	routes   map[string]int
	replaced []string // the keys the Transport replaced, as attempts reported them
}

func (l *routeLog) add(route string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.routes == nil {
		l.routes = map[string]int{}
	}
	l.routes[route]++
}

func (l *routeLog) observer() retrybudget.Observer {
	return retrybudget.Observer{
		Attempt: func(e retrybudget.AttemptEvent) {
			l.add(e.Route)
			if e.Replaced != "" {
				l.mu.Lock()
				l.replaced = append(l.replaced, e.Replaced)
				l.mu.Unlock()
			}
		},
		Retry:    func(e retrybudget.RetryEvent) { l.add(e.Route) },
		GiveUp:   func(e retrybudget.GiveUpEvent) { l.add(e.Outcome.Route) },
		Budget:   func(e retrybudget.BudgetEvent) { l.add(e.Route) },
		Limited:  func(e retrybudget.LimitEvent) { l.add(e.Route) },
		Cooldown: func(e retrybudget.LimitEvent) { l.add(e.Route) },
		Ledger:   func(e retrybudget.LedgerEvent) { l.add(e.Route) },
	}
}

// JobRunTwiceOneEffect submits one Action twice through the SDK at its
// default settings, with the Ledger set on the Transport (the preset's
// Route inherits it): the provider applies one effect, every send carries
// the Action's key where the provider honours keys (an SDK's own random
// key is replaced, and the Observer says so), and every event and Outcome
// names the preset's route.
func JobRunTwiceOneEffect(t *testing.T, s SDK) {
	p := Start(t, s)
	var log routeLog
	tr := NewTransport(s, p, retrybudget.Config{
		Ledger:   retrybudget.LedgerConfig{Store: ledger.NewMemory(ledger.MemoryConfig{})},
		Observer: log.observer(),
	})
	a := retrybudget.Action{Tenant: "acme", Operation: "pay", Key: "order-1"}
	var outs []retrybudget.Outcome
	for run := range 2 {
		ctx, out := retrybudget.CaptureOutcome(retrybudget.WithAction(context.Background(), a))
		if err := s.Call(ctx, p.URL(), tr, true); err != nil {
			t.Fatalf("run %d: %v", run+1, err)
		}
		o, ok := out.Last()
		if !ok {
			t.Fatalf("run %d: no outcome captured", run+1)
		}
		outs = append(outs, o)
	}
	if got := p.Effects(); got != 1 {
		t.Fatalf("effects = %d, want 1 (arrivals %+v)", got, p.Targets())
	}
	if !outs[1].Replayed {
		t.Errorf("second run not replayed from the ledger: %+v", outs[1])
	}
	name := s.Preset().Name
	for _, o := range outs {
		if o.Route != name {
			t.Errorf("Outcome.Route = %q, want %q", o.Route, name)
		}
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	for route, n := range log.routes {
		if route != name {
			t.Errorf("%d events name route %q, want %q", n, route, name)
		}
	}
	if s.Honours {
		for _, arr := range p.Targets() {
			if arr.Key != a.IdempotencyKey() {
				t.Errorf("provider saw key %q, want the Action's %q", arr.Key, a.IdempotencyKey())
			}
		}
	}
	if s.SetsOwnKey && len(log.replaced) == 0 {
		t.Errorf("no attempt reported a replaced key for %s's own Idempotency-Key", s.Name)
	}
}

// ActionKeyWinsWithoutLedger: with no Ledger, a provider that honours keys
// still applies one effect for an Action submitted twice, because the
// Action's key replaces any random one the SDK sets on each call.
func ActionKeyWinsWithoutLedger(t *testing.T, s SDK) {
	if !s.Honours {
		t.Fatalf("%s's provider honours no key header", s.Name)
	}
	p := Start(t, s)
	tr := NewTransport(s, p, retrybudget.Config{})
	ctx := retrybudget.WithAction(context.Background(), retrybudget.Action{Operation: "pay", Key: "order-2"})
	for run := range 2 {
		if err := s.Call(ctx, p.URL(), tr, true); err != nil {
			t.Fatalf("run %d: %v", run+1, err)
		}
	}
	if got := p.Effects(); got != 1 {
		t.Fatalf("effects = %d, want 1", got)
	}
}
