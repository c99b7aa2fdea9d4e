package retrybudget

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/ledgertest"
	"github.com/retrybudget/retrybudget/limiter"
)

// holdLimiter holds every call of the tenant "held" after its reservation
// and before its sending mark, until release is closed or the call's
// context ends: the point where a worker has reserved an action and sent
// nothing. It reports the hold as a wait inside Allow
// (limiter.Decision.Waited), as a limiter that waits must, unless silent.
type holdLimiter struct {
	reached chan struct{} // one value per held call
	release chan struct{}
	// silent answers a held call without reporting its wait, as though
	// it had answered at once: the call cannot tell it waited.
	silent bool
}

func newHoldLimiter() *holdLimiter {
	return &holdLimiter{reached: make(chan struct{}, 64), release: make(chan struct{})}
}

func (l *holdLimiter) Allow(ctx context.Context, r limiter.Request) (limiter.Decision, error) {
	if r.Owner != "held" {
		return limiter.Decision{Allowed: true}, nil
	}
	start := time.Now()
	l.reached <- struct{}{}
	select {
	case <-l.release:
	case <-ctx.Done():
		return limiter.Decision{}, ctx.Err()
	}
	if l.silent {
		return limiter.Decision{Allowed: true}, nil
	}
	return limiter.Decision{Allowed: true, Waited: max(time.Since(start), time.Nanosecond)}, nil
}

func (l *holdLimiter) Cooldown(context.Context, string, time.Time) error { return nil }

// earlierRun starts a call of act through a Transport of owner pod-1 under
// another process instance, the run before a restart, and returns once the
// call is held where hold says: "reserved" (after the reservation, before
// the sending mark) or "applied" (the provider applied the effect and has
// not answered). The call ends when the test lets it go.
func earlierRun(t *testing.T, store ledger.Store, p *payments, act Action, hold string, instance string, obs func(LedgerEvent)) <-chan error {
	t.Helper()
	cfg := Config{Ledger: LedgerConfig{Store: store, Owner: "pod-1", instance: instance, Lease: 30 * time.Second}}
	cfg.Observer.Ledger = obs
	done := make(chan error, 1)
	switch hold {
	case "reserved":
		lim := newHoldLimiter()
		cfg.Limiter = lim
		t.Cleanup(func() { close(lim.release); <-done })
		go func() { done <- callErr(t, New(cfg), p.URL, act) }()
		<-lim.reached
	case "applied":
		applied, release := make(chan struct{}), make(chan struct{})
		// Only the first request hangs; sync.Once would hold the later
		// ones until the first returned.
		var first atomic.Bool
		p.mu.Lock()
		p.hold = func() {
			if first.CompareAndSwap(false, true) {
				close(applied)
				<-release
			}
		}
		p.mu.Unlock()
		t.Cleanup(func() { close(release); <-done })
		go func() { done <- callErr(t, New(cfg), p.URL, act) }()
		<-applied
	}
	return done
}

// callErr charges act and returns the call's error, reading and closing
// any response.
func callErr(t *testing.T, tr http.RoundTripper, url string, act Action) error {
	resp, err := chargeTo(t, tr, url, act, `{"amount":100}`)
	if err == nil {
		readAll(t, resp)
	}
	return err
}

// A worker restarted under the same stable Owner takes over the actions its
// earlier run left in progress at once, not after their 30 s leases, and
// decides each as ledger.Resolve does for a dead owner. Counted at the
// provider.
func TestRestartedWorkerReclaimsItsActionsAtOnce(t *testing.T) {
	held := Action{Tenant: "held", Operation: "charge", Key: "order-1"}
	for _, tc := range []struct {
		name  string
		dedup bool   // the provider deduplicates by key
		hold  string // where the earlier run stopped
		act   Action
		cfg   func(p *payments) Config
		// want is the rerun's error (nil: answered), replayed whether the
		// answer is the stored one, effects and calls at the provider.
		want           error
		replayed       bool
		effects, calls int
	}{
		{"never marked as sending: run", false, "reserved", held,
			func(*payments) Config { return Config{} }, nil, false, 1, 1},
		{"maybe sent, reconciler: replayed", false, "applied", order,
			func(p *payments) Config { return Config{Ledger: LedgerConfig{Reconciler: byKey(p)}} }, nil, true, 1, 1},
		{"maybe sent, keys honoured: re-sent under the key", true, "applied", order,
			func(*payments) Config { return Config{KeysHonoured: true} }, nil, false, 1, 2},
		{"maybe sent, neither: uncertain", false, "applied", order,
			func(*payments) Config { return Config{} }, ErrUncertain, false, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := ledger.NewMemory(ledger.MemoryConfig{})
			p := newPayments(t, tc.dedup)
			earlierRun(t, store, p, tc.act, tc.hold, "earlier-run", nil)

			// Another worker, and this one under the default owner name,
			// are held until the lease ends.
			for _, owner := range []string{"pod-2", ""} {
				err := callErr(t, New(Config{Ledger: LedgerConfig{Store: store, Owner: owner}}), p.URL, tc.act)
				if !errors.Is(err, ErrPending) {
					t.Fatalf("owner %q: %v, want ErrPending", owner, err)
				}
			}

			cfg := tc.cfg(p)
			cfg.Ledger.Store, cfg.Ledger.Owner, cfg.Ledger.Lease = store, "pod-1", 30*time.Second
			start := time.Now()
			resp, err := chargeTo(t, New(cfg), p.URL, tc.act, `{"amount":100}`)
			took := time.Since(start)
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("rerun: %v, want %v", err, tc.want)
			}
			if err == nil {
				if _, o := readAll(t, resp); o.Replayed != tc.replayed {
					t.Fatalf("rerun: Replayed %t, want %t", o.Replayed, tc.replayed)
				}
			}
			if took > 3*time.Second {
				t.Fatalf("rerun took %s: it waited out the lease", took)
			}
			effects, calls := p.total()
			if effects != tc.effects || calls != tc.calls {
				t.Fatalf("provider: %d effects, %d calls; want %d, %d", effects, calls, tc.effects, tc.calls)
			}
			r := stateOf(t, store, tc.act)
			if want := ledger.StateCompleted; tc.want == nil && r.State != want {
				t.Fatalf("record %s, want %s", r.State, want)
			}
		})
	}
}

// Two live processes given one owner name by mistake take each other's
// actions over, but never both send one: the one that lost the action has
// its sending mark refused, sends nothing, and reports ErrOwnerShared to
// its Observer and in its error. Where keys are honoured the grant carries
// the first mark, and a call that waits on its limiter after it writes the
// mark again before it sends, so a takeover during the wait stops it all
// the same. A takeover between the grant and a send that did not wait
// leaves the loser's one send under the action's key, which the taker
// re-sends under too: the provider applies it once, and the loser learns
// it lost at its outcome.
func TestTwoLiveWorkersSharingAnOwnerNameSendOnceAndReportIt(t *testing.T) {
	for _, st := range []struct {
		name string
		new  func(t *testing.T) ledger.Store
	}{
		{"memory", func(*testing.T) ledger.Store { return ledger.NewMemory(ledger.MemoryConfig{}) }},
		{"redis", func(t *testing.T) ledger.Store {
			return ledgertest.Redis(t, redistest.Start(t).Client(t), redistest.Prefix(t))
		}},
	} {
		for _, tc := range []struct {
			name         string
			keysHonoured bool
			// silent: the limiter's hold is not reported as a wait.
			silent bool
			// loserSends: run-a's one send goes out, under the key.
			loserSends bool
		}{
			{name: "keys not honoured"},
			{name: "keys honoured, waited on the limiter", keysHonoured: true},
			{name: "keys honoured, taken over before a send that did not wait", keysHonoured: true, silent: true, loserSends: true},
		} {
			t.Run(st.name+"/"+tc.name, func(t *testing.T) {
				store := st.new(t)
				p := newPayments(t, tc.keysHonoured)
				held := Action{Tenant: "held", Operation: "charge", Key: "order-1"}
				var mu sync.Mutex // guards reports
				var reports []error
				obs := func(ev LedgerEvent) {
					if errors.Is(ev.Err, ledger.ErrOwnerShared) {
						mu.Lock()
						reports = append(reports, ev.Err)
						mu.Unlock()
					}
				}
				lim := newHoldLimiter()
				lim.silent = tc.silent
				a := Config{KeysHonoured: tc.keysHonoured, Ledger: LedgerConfig{Store: store, Owner: "pod-1", instance: "run-a"}, Limiter: lim}
				a.Observer.Ledger = obs
				aDone := make(chan error, 1)
				go func() { aDone <- callErr(t, New(a), p.URL, held) }()
				<-lim.reached // run-a reserved the action and has sent nothing

				b := Config{KeysHonoured: tc.keysHonoured, Ledger: LedgerConfig{Store: store, Owner: "pod-1", instance: "run-b"}}
				if err := callErr(t, New(b), p.URL, held); err != nil {
					t.Fatalf("run-b: %v", err)
				}
				close(lim.release)
				aErr := <-aDone
				wantCalls := 1
				if tc.loserSends {
					// The provider answers run-a's send under the key
					// with the action's one effect.
					wantCalls = 2
					if aErr != nil {
						t.Fatalf("run-a: %v, want the provider's answer", aErr)
					}
				} else if !errors.Is(aErr, ErrPending) || !errors.Is(aErr, ledger.ErrOwnerShared) {
					t.Fatalf("run-a: %v, want ErrPending caused by ErrOwnerShared", aErr)
				}
				if effects, calls := p.total(); effects != 1 || calls != wantCalls {
					t.Fatalf("provider: %d effects, %d calls; want 1, %d", effects, calls, wantCalls)
				}
				mu.Lock()
				defer mu.Unlock()
				if len(reports) != 1 {
					t.Fatalf("%d ErrOwnerShared reports, want 1: %v", len(reports), reports)
				}
			})
		}
	}
}

// Racing the same actions from two live Transports under one owner name
// never sends an action twice, whoever wins each.
func TestTwoLiveWorkersSharingAnOwnerNameRaceToOneEffectEach(t *testing.T) {
	store := ledger.NewMemory(ledger.MemoryConfig{})
	p := newPayments(t, false)
	var trs []*Transport
	for _, run := range []string{"run-a", "run-b"} {
		trs = append(trs, New(Config{Ledger: LedgerConfig{Store: store, Owner: "pod-1", instance: run}}))
	}
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		act := Action{Tenant: "acme", Operation: "charge", Key: fmt.Sprintf("race-%d", i)}
		for _, tr := range trs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- callErr(t, tr, p.URL, act)
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		// Losing to the other run is reported as a shared name; a
		// reclaim of a marked action is uncertain, never re-sent.
		if err != nil && !errors.Is(err, ledger.ErrOwnerShared) && !errors.Is(err, ErrUncertain) {
			t.Errorf("call: %v", err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range n {
		key := Action{Tenant: "acme", Operation: "charge", Key: fmt.Sprintf("race-%d", i)}.IdempotencyKey()
		if p.effects[key] != 1 {
			t.Errorf("race-%d: %d effects, want 1", i, p.effects[key])
		}
	}
}

// Only a stable Owner, given or inherited, reserves under the process's
// instance; the default owner name never reclaims, also in a Route.
func TestOnlyAStableOwnerReclaims(t *testing.T) {
	store := ledger.NewMemory(ledger.MemoryConfig{})
	routes := []Route{{Name: "pay", Host: "pay.example"}}
	for _, tc := range []struct {
		owner string
		want  string
	}{{"", ""}, {"pod-1", processInstance()}} {
		tr := New(Config{Ledger: LedgerConfig{Store: store, Owner: tc.owner}, Routes: routes})
		for _, cfg := range []Config{tr.cfg, tr.routes[0].p.cfg} {
			if cfg.Ledger.instance != tc.want || cfg.Ledger.Owner == "" {
				t.Errorf("owner %q: Owner %q, instance %q; want instance %q", tc.owner, cfg.Ledger.Owner, cfg.Ledger.instance, tc.want)
			}
		}
	}
}
