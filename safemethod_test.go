package retrybudget

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/retrybudget/retrybudget/ledger"
)

// TestSafeMethodsOutsideTheAction: a GET, HEAD or OPTIONS under an Action
// reaches the provider every time, unkeyed and outside the ledger (RFC
// 9110 §9.2.1: there is no effect to deduplicate), even when its query
// changes (a list's next page); a Route with ActionOnSafeMethods keeps
// them under the Action: keyed, recorded and replayed.
func TestSafeMethodsOutsideTheAction(t *testing.T) {
	var mu sync.Mutex // guards keys
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		io.WriteString(w, "page")
	}))
	t.Cleanup(srv.Close)
	sent := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), keys...)
	}
	ctx := WithAction(context.Background(), Action{Tenant: "acme", Operation: "report", Key: "job-1"})
	do := func(t *testing.T, tr *Transport, method, path string) Outcome {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, srv.URL+path, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		out, _ := OutcomeOf(resp)
		return out
	}
	store := func() LedgerConfig { return LedgerConfig{Store: ledger.NewMemory(ledger.MemoryConfig{})} }

	t.Run("outside the Action", func(t *testing.T) {
		n := len(sent())
		tr := New(Config{Ledger: store()})
		for _, m := range []string{"GET", "GET", "HEAD", "OPTIONS"} {
			for _, path := range []string{"/v1/charges", "/v1/charges?starting_after=ch_3"} {
				if out := do(t, tr, m, path); out.Replayed || out.Reason != nil || out.Key != "" {
					t.Fatalf("%s %s: replayed %v, reason %v, key %q; want sent, unkeyed", m, path, out.Replayed, out.Reason, out.Key)
				}
			}
		}
		got := sent()[n:]
		if len(got) != 8 || strings.Join(got, "") != "" {
			t.Fatalf("arrivals %q; want 8, unkeyed", got)
		}
	})
	t.Run("ActionOnSafeMethods", func(t *testing.T) {
		n := len(sent())
		host := strings.TrimPrefix(srv.URL, "http://")
		tr := New(Config{Ledger: store(), Routes: []Route{{Host: host, ActionOnSafeMethods: true}}})
		first := do(t, tr, "GET", "/v1/charges")
		again := do(t, tr, "GET", "/v1/charges")
		got := sent()[n:]
		if first.Replayed || !again.Replayed || len(got) != 1 || got[0] == "" {
			t.Fatalf("replayed %v then %v, arrivals %q; want one keyed arrival, then a replay", first.Replayed, again.Replayed, got)
		}
	})
}

// TestScopedAction: a scope gives the Action a key and record of its own,
// no two scopes share one, and an empty scope changes nothing.
func TestScopedAction(t *testing.T) {
	a := Action{Tenant: "acme", Operation: "charge", Key: "order-1"}
	if ScopedAction(a, "") != a {
		t.Fatalf("ScopedAction(a, \"\") = %+v; want a", ScopedAction(a, ""))
	}
	seen := map[string]string{a.IdempotencyKey(): "unscoped"}
	for _, tc := range []struct{ scope, key string }{
		{"acct_1", "order-1"}, {"acct_2", "order-1"}, {"acct_1o", "rder-1"}, {"acct_", "1order-1"},
	} {
		s := ScopedAction(Action{Tenant: a.Tenant, Operation: a.Operation, Key: tc.key}, tc.scope)
		if s.Tenant != a.Tenant || s.Operation != a.Operation {
			t.Fatalf("scope %q changed the tenant or operation: %+v", tc.scope, s)
		}
		if prev, ok := seen[s.IdempotencyKey()]; ok {
			t.Fatalf("scope %q, key %q shares its idempotency key with %s", tc.scope, tc.key, prev)
		}
		seen[s.IdempotencyKey()] = tc.scope + "/" + tc.key
	}
}
