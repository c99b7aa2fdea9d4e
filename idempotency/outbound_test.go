package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/idempotency"
	"github.com/retrybudget/retrybudget/ledger"
)

// provider is a fake payment API that records the Idempotency-Key of every
// request it receives.
type provider struct {
	mu   sync.Mutex // guards keys
	keys []string
	srv  *httptest.Server
}

func startProvider(t *testing.T) *provider {
	t.Helper()
	p := &provider{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.keys = append(p.keys, r.Header.Get("Idempotency-Key"))
		n := len(p.keys)
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"charge":"ch_%d"}`, n)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *provider) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.keys...)
}

// charge calls the provider through client with ctx and returns its body
// and the Transport's outcome.
func charge(ctx context.Context, client *http.Client, url string) (string, retrybudget.Outcome, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/charges", strings.NewReader(`{"amount":100}`))
	resp, err := client.Do(req)
	if err != nil {
		return "", retrybudget.Outcome{}, err
	}
	defer resp.Body.Close()
	out, _ := retrybudget.OutcomeOf(resp)
	b, err := io.ReadAll(resp.Body)
	return string(b), out, err
}

// TestOutboundStepSharesStore runs a handler that charges a provider
// through a retrybudget.Transport sharing the middleware's store, under the
// action WithStep derives. Its first run fails after the charge; the run
// that follows gets the charge replayed from the Transport's record, and
// the provider sees one request, whose key is derived from the inbound
// action.
func TestOutboundStepSharesStore(t *testing.T) {
	p := startProvider(t)
	store := ledger.NewMemory(ledger.MemoryConfig{})
	client := &http.Client{Transport: retrybudget.New(retrybudget.Config{Ledger: retrybudget.LedgerConfig{Store: store}})}
	var mu sync.Mutex // guards outcomes
	var outcomes []retrybudget.Outcome
	e := newEnv(t, idempotency.Config{Store: store, RerunUncertain: true}, func(run int, w http.ResponseWriter, r *http.Request) {
		ctx, err := idempotency.WithStep(r.Context(), "provider")
		if err != nil {
			t.Error(err)
			return
		}
		idempotency.MarkEffect(ctx)
		body, out, err := charge(ctx, client, p.srv.URL)
		mu.Lock()
		outcomes = append(outcomes, out)
		mu.Unlock()
		if err != nil || run == 1 {
			// The charge went through, but saving it locally failed.
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, body)
	})

	for i, want := range []struct {
		status   int
		body     string
		replayed string
	}{
		{500, "", ""},
		{201, `{"charge":"ch_1"}`, ""},
		{201, `{"charge":"ch_1"}`, "true"},
	} {
		res := e.send(request{})
		if res.Code != want.status || res.Body.String() != want.body || res.Header().Get(idempotency.HeaderReplayed) != want.replayed {
			t.Errorf("request %d: %d %q replayed=%q; want %d %q replayed=%q", i, res.Code, res.Body,
				res.Header().Get(idempotency.HeaderReplayed), want.status, want.body, want.replayed)
		}
	}
	if got := e.runs.Load(); got != 2 {
		t.Errorf("handler ran %d times, want 2", got)
	}

	inbound := retrybudget.Action{Tenant: defaultTenant, Operation: "POST /things", Key: "k1"}
	rec, err := store.Get(context.Background(), inbound)
	if err != nil {
		t.Fatal(err)
	}
	derived, err := idempotency.Outbound(inbound, rec.CreatedAt, "provider")
	if err != nil {
		t.Fatal(err)
	}
	if derived.Operation != "POST /things -> provider" {
		t.Errorf("derived operation %q", derived.Operation)
	}
	if keys := p.seen(); len(keys) != 1 || keys[0] != derived.IdempotencyKey() || keys[0] == inbound.IdempotencyKey() {
		t.Errorf("provider saw keys %q, want once %q (derived from the inbound action, not its own key %q)",
			keys, derived.IdempotencyKey(), inbound.IdempotencyKey())
	}
	if len(outcomes) != 2 || outcomes[0].Replayed || !outcomes[1].Replayed {
		t.Errorf("outbound outcomes %+v: want a real call, then a replay", outcomes)
	}
	for _, k := range []ledger.Key{inbound, derived} {
		rec, err := store.Get(context.Background(), k)
		if err != nil || rec.State != ledger.StateCompleted {
			t.Errorf("record %q: %v %v, want completed", k.Operation, rec.State, err)
		}
	}
}

// TestOutboundUnderInboundActionCollides pins the reason WithStep exists:
// a Transport sharing the store and sent under the inbound action itself
// finds the inbound record, held by the running request, and refuses
// without calling the provider: with ErrConflict, since the outbound
// request's fingerprint differs from the inbound one (ErrPending if they
// matched).
func TestOutboundUnderInboundActionCollides(t *testing.T) {
	p := startProvider(t)
	store := ledger.NewMemory(ledger.MemoryConfig{})
	client := &http.Client{Transport: retrybudget.New(retrybudget.Config{Ledger: retrybudget.LedgerConfig{Store: store}})}
	var callErr error
	e := newEnv(t, idempotency.Config{Store: store}, func(run int, w http.ResponseWriter, r *http.Request) {
		_, _, callErr = charge(r.Context(), client, p.srv.URL)
		w.WriteHeader(http.StatusBadGateway)
	})
	e.send(request{})
	if !errors.Is(callErr, retrybudget.ErrConflict) || len(p.seen()) != 0 {
		t.Errorf("call under the inbound action: %v, provider saw %d; want ErrConflict and none", callErr, len(p.seen()))
	}
}

// TestActionInContext checks what a guarded handler finds in its context,
// before and after WithStep.
func TestActionInContext(t *testing.T) {
	want := retrybudget.Action{Tenant: "acme", Operation: "POST /things", Key: "tenant_a:campaign_19:revision_4"}
	e := newEnv(t, idempotency.Config{Tenant: func(*http.Request) string { return "acme" }},
		func(run int, w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			if a, ok := idempotency.InboundFrom(ctx); !ok || a != want {
				t.Errorf("idempotency.InboundFrom = %+v %v", a, ok)
			}
			if a, ok := retrybudget.ActionFrom(ctx); !ok || a != want {
				t.Errorf("retrybudget.ActionFrom = %+v %v", a, ok)
			}
			step, err := idempotency.WithStep(ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			sibling, _ := idempotency.WithStep(step, "b")
			if a, _ := retrybudget.ActionFrom(sibling); a.Operation != "POST /things -> b" || !strings.HasPrefix(a.Key, want.Key+"#") || a.Tenant != "acme" {
				t.Errorf("sibling step action %+v", a)
			}
			if a, _ := idempotency.InboundFrom(sibling); a != want {
				t.Errorf("inbound action after WithStep = %+v", a)
			}
			if _, err := idempotency.WithStep(ctx, ""); !errors.Is(err, idempotency.ErrEmptyStep) {
				t.Errorf("WithStep empty: %v", err)
			}
		})
	e.send(request{keys: []string{`"tenant_a:campaign_19:revision_4"`}})
	if e.runs.Load() != 1 {
		t.Fatal("handler did not run")
	}
	if _, err := idempotency.WithStep(context.Background(), "a"); !errors.Is(err, idempotency.ErrNoAction) {
		t.Errorf("WithStep without a guarded request: %v", err)
	}
	if err := idempotency.MarkEffect(context.Background()); !errors.Is(err, idempotency.ErrNoAction) {
		t.Errorf("MarkEffect outside a guarded request: %v; want ErrNoAction", err)
	}
}
