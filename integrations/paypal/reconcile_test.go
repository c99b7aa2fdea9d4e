package paypal_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plutov/paypal/v4"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/integrations/internal/sdktest"
	rbpaypal "github.com/retrybudget/retrybudget/integrations/paypal"
	"github.com/retrybudget/retrybudget/internal/fakeclock"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/presets"
)

// billing is a fake of PayPal's subscriptions API as PayPal documents it:
// POST /v1/billing/subscriptions/{id}/cancel cancels the subscription and
// answers 204 (it takes no PayPal-Request-Id); GET
// /v1/billing/subscriptions/{id} reads its status and status_update_time.
// lose makes it cancel and cut the connection instead of answering; drop
// cuts it before cancelling.
type billing struct {
	// mu guards everything below.
	mu         sync.Mutex
	status     map[string]string
	updated    map[string]time.Time
	cancels    int
	lose, drop bool
}

func (b *billing) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r.URL.Path == "/v1/oauth2/token" {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"scope":"s","access_token":"A21AA","token_type":"Bearer","app_id":"APP","expires_in":32400,"nonce":"n"}`))
		return
	}
	id, action, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1/billing/subscriptions/"), "/")
	switch {
	case r.Method == http.MethodGet && action == "":
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": id, "status": b.status[id], "status_update_time": b.updated[id].Format(time.RFC3339)})
	case r.Method == http.MethodPost && action == "cancel":
		if b.drop {
			b.drop = false
			sdktest.Cut(w)
			return
		}
		b.cancels++
		b.status[id], b.updated[id] = "CANCELLED", time.Now().UTC().Truncate(time.Second)
		if b.lose {
			b.lose = false
			sdktest.Cut(w)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

func (b *billing) cancelled() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cancels
}

// TestSubscriptionReconcilerSettlesHeldCancels: a cancel whose answer was
// lost is held (StepHold); the reconciler reads the subscription, finds it
// cancelled since the action began and completes the action, so the next
// run replays the 204. A cancel cut before PayPal got it is left uncertain
// inside the settle time and failed after, so the next run sends it, once.
func TestSubscriptionReconcilerSettlesHeldCancels(t *testing.T) {
	past := time.Now().Add(-24 * time.Hour)
	b := &billing{status: map[string]string{"I-1": "ACTIVE", "I-2": "ACTIVE"}, updated: map[string]time.Time{"I-1": past, "I-2": past}}
	srv := httptest.NewServer(b)
	defer srv.Close()
	clock := fakeclock.New(time.Now())
	// The store and the reconciler wait out the same settle time.
	const settle = 20 * time.Second
	store := ledger.NewMemory(ledger.MemoryConfig{Now: clock.Now})
	tr := retrybudget.New(retrybudget.Config{Routes: sdktest.SettledRoutes(presets.PayPalRoutes(), srv.URL, settle),
		Ledger: retrybudget.LedgerConfig{Store: store}})
	client, err := rbpaypal.NewClient("client", "secret", srv.URL, tr)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rbpaypal.NewSubscriptionReconcilerAt(rbpaypal.SubscriptionReconcilerConfig{
		Client: client, Settle: settle,
		Change: func(_ context.Context, k ledger.Key) (rbpaypal.StatusChange, error) {
			return rbpaypal.StatusChange{ID: k.Key, Want: paypal.SubscriptionStatusCancelled}, nil
		},
	}, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	cancel := func(t *testing.T, id string) retrybudget.Step {
		t.Helper()
		a := retrybudget.Action{Tenant: "acme", Operation: "cancel", Key: id}
		ctx, stop := context.WithTimeout(retrybudget.WithAction(context.Background(), a), 5*time.Second)
		defer stop()
		err := client.CancelSubscription(ctx, id, "customer asked")
		if err == nil {
			return retrybudget.StepDone
		}
		step, _ := retrybudget.Next(nil, err)
		return step
	}
	sdktest.HeldSends{
		Store: store, Reconciler: rc, Tenant: "acme", Operation: "cancel", Send: cancel,
		Lose:    func() { b.mu.Lock(); b.lose = true; b.mu.Unlock() },
		Drop:    func() { b.mu.Lock(); b.drop = true; b.mu.Unlock() },
		Effects: b.cancelled, Settle: settle, Advance: clock.Advance,
	}.Run(t, "I-1", "I-2", 0)
}
