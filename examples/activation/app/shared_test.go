package app

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger"
)

// TestTwoInstancesOnRedis pins that a replayed Location answers on every
// instance, not 404 on all but the one that made it: with the ledger and the activations in
// one Redis, instance B replays A's activation and answers its Location,
// the admin endpoint shows both records completed, and the one
// destination counts one sync.
func TestTwoInstancesOnRedis(t *testing.T) {
	prefix := redistest.Prefix(t)
	// One Redis (REDIS_ADDR, else a private server), a client per instance.
	var server *redistest.Server
	if os.Getenv("REDIS_ADDR") == "" {
		server = redistest.Start(t)
	}
	dest := NewDestination(nil, nil)
	dsrv := httptest.NewServer(dest.Handler())
	t.Cleanup(dsrv.Close)
	instance := func(owner string) http.Handler {
		var client *redis.Client
		if server != nil {
			client = server.Client(t)
		} else {
			client = redistest.Client(t)
		}
		store, err := ledger.NewRedis(client, ledger.RedisConfig{Prefix: prefix + "ledger:",
			Config: ledger.Config{FingerprintKeys: ledger.FingerprintKeys{redistest.LedgerKey()}}})
		if err != nil {
			t.Fatal(err)
		}
		return New(Config{Store: store, Activations: NewRedisActivations(client, prefix+"activations:"),
			Destination: dsrv.URL, Owner: owner})
	}
	a, b := instance("instance-a"), instance("instance-b")
	send := func(h http.Handler, method, path, key, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer token_a")
		if strings.HasPrefix(path, "/admin/") {
			r.Header.Set("Authorization", "Bearer token_ops")
		}
		if key != "" {
			r.Header.Set("Idempotency-Key", key)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	first := send(a, http.MethodPost, activationsPath, seedKey, seedBody)
	again := send(b, http.MethodPost, activationsPath, seedKey, seedBody)
	if first.Code != http.StatusCreated || again.Code != http.StatusCreated || again.Body.String() != first.Body.String() {
		t.Fatalf("A %d %s; B %d %s", first.Code, first.Body, again.Code, again.Body)
	}
	if again.Header().Get("Idempotent-Replayed") != "true" {
		t.Errorf("B did not replay: %v", again.Header())
	}
	if got := send(b, http.MethodGet, first.Header().Get("Location"), "", ""); got.Code != http.StatusOK || got.Body.String() != first.Body.String() {
		t.Errorf("GET Location on B: %d %s", got.Code, got.Body)
	}
	if st := dest.Stats(); st.Requests != 1 || st.Syncs != 1 {
		t.Errorf("destination %+v, want 1 request and 1 sync", st)
	}
	w := send(b, http.MethodGet, "/admin/tenants/tenant_a/actions/"+seedKey, "", "")
	var v ActionView
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || v.Inbound == nil || v.Inbound.State != "completed" ||
		v.Inbound.Status != http.StatusCreated || v.Destination == nil || v.Destination.State != "completed" ||
		len(v.Inbound.Attempts) == 0 || v.Inbound.Attempts[0].Owner != "instance-a" {
		t.Errorf("admin: %d %s", w.Code, w.Body)
	}
	if w := send(b, http.MethodGet, "/admin/stuck", "", ""); w.Code != http.StatusOK || strings.TrimSpace(w.Body.String()) != "[]" {
		t.Errorf("stuck: %d %s", w.Code, w.Body)
	}
}
