package app

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/idempotency"
	"github.com/retrybudget/retrybudget/ledger"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// seedKey and seedBody are the README's seed scenario.
const (
	seedKey  = "tenant_a:campaign_19:revision_4"
	seedBody = `{"campaign_id":"campaign_19","revision":4,"audience_id":"audience_28"}`
)

// guardTimeout only turns a deadlock into a failure.
const guardTimeout = 10 * time.Second

// fixture is the service over a Memory ledger, with its destination on a
// loopback httptest.Server whose slow syncs wait for release.
type fixture struct {
	app     http.Handler
	dest    *Destination
	store   *ledger.Memory
	entered chan struct{}
	release chan struct{}
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{entered: make(chan struct{}, 1), release: make(chan struct{})}
	logger := slog.New(slog.DiscardHandler)
	f.dest = NewDestination(func(ctx context.Context) {
		f.entered <- struct{}{}
		select {
		case <-f.release:
		case <-ctx.Done():
		}
	}, logger)
	dsrv := httptest.NewServer(f.dest.Handler())
	t.Cleanup(dsrv.Close)
	f.store = ledger.NewMemory(ledger.MemoryConfig{})
	f.app = New(Config{Store: f.store, Destination: dsrv.URL, Logger: logger})
	return f
}

// post sends an activation as tenant_a.
func (f *fixture) post(key, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/api/v1/campaign-activations", strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer token_a")
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Idempotency-Key", key)
	w := httptest.NewRecorder()
	f.app.ServeHTTP(w, r)
	return w
}

// problemType returns the problem type of w, or "" when it is no problem.
func problemType(w *httptest.ResponseRecorder) string {
	if w.Header().Get("Content-Type") != "application/problem+json" {
		return ""
	}
	var p retrybudget.Problem
	_ = json.Unmarshal(w.Body.Bytes(), &p)
	return p.Type
}

// TestSeedScenario activates campaign_19 revision 4: 201 with the
// activation, its Location, and one sync at the destination under the key
// derived from the inbound action.
func TestSeedScenario(t *testing.T) {
	f := newFixture(t)
	w := f.post(seedKey, seedBody)
	var a Activation
	if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil || w.Code != http.StatusCreated {
		t.Fatalf("%d %s: %v", w.Code, w.Body, err)
	}
	if !strings.HasPrefix(a.ID, "act_") || a.State != "completed" || w.Header().Get("Location") != "/api/v1/campaign-activations/"+a.ID {
		t.Errorf("activation %+v, Location %q", a, w.Header().Get("Location"))
	}
	inbound := retrybudget.Action{Tenant: "tenant_a", Operation: "POST /api/v1/campaign-activations", Key: seedKey}
	rec, err := f.store.Get(context.Background(), inbound)
	if err != nil {
		t.Fatal(err)
	}
	step, _ := idempotency.Outbound(inbound, rec.CreatedAt, "destination")
	if !f.dest.Synced(step.IdempotencyKey()) {
		t.Errorf("destination has no sync under the derived key %s", step.IdempotencyKey())
	}

	r := httptest.NewRequest(http.MethodGet, w.Header().Get("Location"), nil)
	r.Header.Set("Authorization", "Bearer token_a")
	got := httptest.NewRecorder()
	f.app.ServeHTTP(got, r)
	if got.Code != http.StatusOK || !strings.Contains(got.Body.String(), a.ID) {
		t.Errorf("GET Location: %d %s", got.Code, got.Body)
	}
}

// TestReadmeCases drives the four cases the README shows with curl.
func TestReadmeCases(t *testing.T) {
	t.Run("replay", func(t *testing.T) {
		f := newFixture(t)
		first := f.post(seedKey, seedBody)
		again := f.post(seedKey, seedBody)
		if again.Code != http.StatusCreated || again.Body.String() != first.Body.String() ||
			again.Header().Get(idempotency.HeaderReplayed) != "true" || again.Header().Get("Location") != first.Header().Get("Location") {
			t.Errorf("replay: %d %s %v; first %s", again.Code, again.Body, again.Header(), first.Body)
		}
		if st := f.dest.Stats(); st.Requests != 1 || st.Syncs != 1 {
			t.Errorf("destination %+v; want 1 request and 1 sync", st)
		}
	})
	t.Run("conflict", func(t *testing.T) {
		f := newFixture(t)
		f.post(seedKey, seedBody)
		w := f.post(seedKey, strings.Replace(seedBody, `"revision":4`, `"revision":5`, 1))
		if w.Code != http.StatusUnprocessableEntity || problemType(w) != idempotency.TypeConflict {
			t.Errorf("conflict: %d %s", w.Code, w.Body)
		}
		if st := f.dest.Stats(); st.Requests != 1 {
			t.Errorf("destination saw %d requests, want 1", st.Requests)
		}
	})
	t.Run("pending", func(t *testing.T) {
		f := newFixture(t)
		const key = "tenant_a:campaign_20:revision_1"
		body := `{"campaign_id":"campaign_20","revision":1,"audience_id":"` + SlowAudience + `"}`
		first := make(chan *httptest.ResponseRecorder, 1)
		go func() { first <- f.post(key, body) }()
		select {
		case <-f.entered:
		case <-time.After(guardTimeout):
			t.Fatal("the slow sync never started")
		}
		w := f.post(key, body)
		close(f.release)
		// No activation has ended yet in this instance: come back in a
		// second (the middleware's hint), well before the lease ends.
		if w.Code != http.StatusConflict || problemType(w) != idempotency.TypePending ||
			w.Header().Get("Retry-After") != "1" {
			t.Errorf("pending: %d %v %s", w.Code, w.Header(), w.Body)
		}
		if w := <-first; w.Code != http.StatusCreated {
			t.Errorf("first: %d %s", w.Code, w.Body)
		}
		if w := f.post(key, body); w.Code != http.StatusCreated || w.Header().Get(idempotency.HeaderReplayed) != "true" {
			t.Errorf("after: %d %v", w.Code, w.Header())
		}
		if st := f.dest.Stats(); st.Requests != 1 {
			t.Errorf("destination saw %d requests, want 1", st.Requests)
		}
	})
	t.Run("rate-limited destination", func(t *testing.T) {
		f := newFixture(t)
		const key = "tenant_a:campaign_limited:revision_1"
		body := `{"campaign_id":"` + LimitedCampaign + `","revision":1,"audience_id":"audience_28"}`
		for i := 1; i <= 2; i++ {
			w := f.post(key, body)
			ra, err := strconv.Atoi(w.Header().Get("Retry-After"))
			if w.Code != http.StatusServiceUnavailable || problemType(w) != TypeDestinationRateLimited ||
				err != nil || ra < 1 || ra > 30 || w.Header().Get(idempotency.HeaderReplayed) != "" {
				t.Errorf("attempt %d: %d %v %s", i, w.Code, w.Header(), w.Body)
			}
			// Nothing happened, so the key is free to run again: the
			// retry reaches the destination, and is not a replay.
			if st := f.dest.Stats(); st.Requests != i || st.Syncs != 0 {
				t.Errorf("attempt %d: destination %+v", i, st)
			}
		}
	})
}
