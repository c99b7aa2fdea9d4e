package idempotency_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/idempotency"
	"github.com/retrybudget/retrybudget/ledger"
)

// TestCrossTenantReplay pins that callers never get each other's stored
// response: two callers identified by an API-key header or a cookie, or by
// nothing at all, send the same key and body. A tenant derived from
// Authorization by default is "" for all three, so the second caller gets
// the first one's 201 with its account data, and the handler does not run
// for it.
func TestCrossTenantReplay(t *testing.T) {
	for _, tt := range []struct {
		name string
		a, b http.Header
	}{
		{"X-Api-Key", http.Header{"X-Api-Key": {"key_alice"}}, http.Header{"X-Api-Key": {"key_mallory"}}},
		{"cookie", http.Header{"Cookie": {"session=alice"}}, http.Header{"Cookie": {"session=mallory"}}},
		{"no credentials", nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var runs atomic.Int32
			h := idempotency.New(idempotency.Config{})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs.Add(1)
				w.WriteHeader(http.StatusCreated)
				w.Write([]byte(`{"account":"` + r.Header.Get("X-Api-Key") + r.Header.Get("Cookie") + `"}`))
			}))
			send := func(hdr http.Header) *httptest.ResponseRecorder {
				r := request{header: hdr}.build()
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				return w
			}
			first := send(tt.a)
			second := send(tt.b)
			if second.Header().Get(idempotency.HeaderReplayed) != "" || (first.Code < 300 && second.Body.String() == first.Body.String()) {
				t.Fatalf("second caller got the first caller's stored response: %d %s", second.Code, second.Body)
			}
			// Without a Tenant the middleware refuses to guess one.
			for _, w := range []*httptest.ResponseRecorder{first, second} {
				if w.Code != http.StatusInternalServerError || problemBody(t, response{ResponseRecorder: w}).Type != idempotency.TypeNoTenant {
					t.Errorf("answer %d %s, want 500 TypeNoTenant", w.Code, w.Body)
				}
			}
			if n := runs.Load(); n != 0 {
				t.Errorf("handler ran %d times without a tenant", n)
			}
		})
	}
}

// TestEmptyTenantRefused pins that a request with no tenant is refused
// before the store is touched: with auth done inside the handler, a request
// with no credentials (Tenant returns "") would share tenant "" with every
// other such request and get their stored responses.
func TestEmptyTenantRefused(t *testing.T) {
	account := func(r *http.Request) string { return r.Header.Get("X-Account") }
	e := newEnv(t, idempotency.Config{Tenant: account}, created)
	if res := e.send(request{header: http.Header{"X-Account": {"alice"}}}); res.Code != http.StatusCreated {
		t.Fatalf("alice got %d, want 201", res.Code)
	}
	res := e.send(request{})
	if res.Code != http.StatusForbidden || problemBody(t, res).Type != idempotency.TypeNoTenant {
		t.Fatalf("anonymous got %d %s, want 403 TypeNoTenant", res.Code, res.Body)
	}
	if res.Header().Get(idempotency.HeaderReplayed) != "" {
		t.Error("anonymous caller got a replay")
	}
	if n := e.runs.Load(); n != 1 {
		t.Errorf("handler ran %d times, want once (alice only)", n)
	}
	if _, err := e.store.Get(t.Context(), ledger.Key{Operation: "POST /things", Key: "k1"}); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("a record under the empty tenant exists: %v", err)
	}
}

// TestCredentialTenantKeysCallersApart checks the helper for services
// without accounts: two API keys get two tenants, neither of which is an
// unkeyed hash of the credential, and a short secret is refused.
func TestCredentialTenantKeysCallersApart(t *testing.T) {
	if _, err := idempotency.CredentialTenant([]byte("short")); !errors.Is(err, idempotency.ErrInvalidConfig) {
		t.Errorf("short secret: %v, want ErrInvalidConfig", err)
	}
	tenant, err := idempotency.CredentialTenant([]byte("0123456789abcdef0123"), "X-Api-Key")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := idempotency.CredentialTenant([]byte("another-deployment-secret"), "X-Api-Key")
	r := func(k string) *http.Request {
		q := httptest.NewRequest("POST", "/", strings.NewReader(""))
		if k != "" {
			q.Header.Set("X-Api-Key", k)
		}
		return q
	}
	a, b := tenant(r("key_a")), tenant(r("key_b"))
	if a == "" || a == b || a == other(r("key_a")) || strings.Contains(a, "key_a") {
		t.Errorf("tenants %q %q %q: want distinct, keyed, not raw", a, b, other(r("key_a")))
	}
	if tenant(r("")) != "" {
		t.Error("a request without the header got a tenant")
	}
}

// With the default store, tenants at their quota leave room for everyone
// else: it takes 100 tenants at their quota to fill it, not four (one
// caller holding four credentials, with CredentialTenant).
func TestFewTenantsCannotFillTheDefaultStore(t *testing.T) {
	var runs atomic.Int64
	h := idempotency.New(idempotency.Config{Tenant: testTenant})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	send := func(tenant, key string) int {
		r := httptest.NewRequest("POST", "/things", strings.NewReader(`{}`))
		r.Header.Set("Idempotency-Key", key)
		r.Header.Set("X-Tenant", tenant)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	// A tenant's quota is 1/100 of the store's records or bytes,
	// whichever it reaches first.
	quota := ledger.DefaultMaxRecords / 100
	var total int64
	for tenant := range 4 {
		created := 0
		for i := 0; ; i++ {
			code := send(strconv.Itoa(tenant), strconv.Itoa(i))
			if code == http.StatusTooManyRequests {
				break
			}
			if code != http.StatusCreated || i > quota {
				t.Fatalf("tenant %d, key %d: %d; want 201 until its quota, then 429", tenant, i, code)
			}
			created++
		}
		if created < quota/2 {
			t.Fatalf("tenant %d refused after %d keys; want its quota, about %d", tenant, created, quota)
		}
		total += int64(created)
	}
	if code := send("bystander", "k1"); code != http.StatusCreated {
		t.Fatalf("another tenant after four at their quota: %d; want 201", code)
	}
	if n := runs.Load(); n != total+1 {
		t.Fatalf("handler ran %d times; want %d", n, total+1)
	}
}

// TestFullLedgerAnswers503: a Memory store at its cap answers the next new
// key 503 TypeLedgerFull with Retry-After, and a tenant at its quota 429,
// without running the handler; keys already held still replay.
func TestFullLedgerAnswers503(t *testing.T) {
	store := ledger.NewMemory(ledger.MemoryConfig{MaxRecords: 3, TenantMaxRecords: 2})
	e := newEnv(t, idempotency.Config{Store: store}, created)
	send := func(tenant, key string) response {
		return e.send(request{keys: []string{key}, header: http.Header{"X-Tenant": {tenant}}})
	}
	for _, q := range [][2]string{{"a", "k1"}, {"a", "k2"}, {"b", "k1"}} {
		if res := send(q[0], q[1]); res.Code != http.StatusCreated {
			t.Fatalf("%v: %d", q, res.Code)
		}
	}
	for _, tt := range []struct {
		tenant string
		status int
	}{{"a", http.StatusTooManyRequests}, {"c", http.StatusServiceUnavailable}} {
		res := send(tt.tenant, "k3")
		// Room comes back when the oldest record reaches its retention,
		// and not before: Retry-After says so, within the test's run time.
		ra, err := strconv.Atoi(res.Header().Get("Retry-After"))
		retention := int(ledger.DefaultRetention / time.Second)
		if res.Code != tt.status || problemBody(t, res).Type != idempotency.TypeLedgerFull || err != nil || ra > retention || ra < retention-60 {
			t.Errorf("tenant %s: %d %s Retry-After %q; want %d TypeLedgerFull, Retry-After about %d", tt.tenant, res.Code, res.Body, res.Header().Get("Retry-After"), tt.status, retention)
		}
	}
	if res := send("a", "k1"); res.Header().Get(idempotency.HeaderReplayed) != "true" {
		t.Errorf("a held key did not replay in a full store: %d", res.Code)
	}
	if n := e.runs.Load(); n != 3 {
		t.Errorf("handler ran %d times, want 3", n)
	}
}

// TestTenantResponsesInFlightStayWithinItsQuota: a tenant's quota is
// checked when an action's record is created, small, and its response is
// stored later. A tenant holding many requests in flight at once, each
// answered with a 64 KiB body, keeps within its share of the default
// store: the responses past it are stored as a hash (their replays carry
// the status, an empty body and HeaderBodyOmitted), each handler runs
// once, and another tenant's response is still stored whole. Before, two
// tenants doing so with 900 requests each filled the store and every
// other tenant was refused for a day.
func TestTenantResponsesInFlightStayWithinItsQuota(t *testing.T) {
	const inFlight = 40 // 40 x 64 KiB: four times the tenant's 1/100 of 64 MiB
	body := strings.Repeat("x", 64<<10)
	var runs atomic.Int64
	arrived := make(chan struct{}, inFlight)
	release := make(chan struct{})
	h := idempotency.New(idempotency.Config{Tenant: testTenant})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		if r.Header.Get("X-Tenant") == "mallory" {
			arrived <- struct{}{}
			<-release
		}
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(body))
	}))
	send := func(tenant, key string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/things", strings.NewReader(`{}`))
		r.Header.Set("Idempotency-Key", key)
		r.Header.Set("X-Tenant", tenant)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	done := make(chan int, inFlight)
	for i := range inFlight {
		go func() { done <- send("mallory", strconv.Itoa(i)).Code }()
	}
	for range inFlight {
		<-arrived // every request holds its record, in progress, before any completes
	}
	close(release)
	for range inFlight {
		if code := <-done; code != http.StatusCreated {
			t.Fatalf("a request in flight: %d; want 201", code)
		}
	}
	whole, hashed := 0, 0
	for i := range inFlight {
		w := send("mallory", strconv.Itoa(i))
		switch {
		case w.Code == http.StatusCreated && w.Body.String() == body:
			whole++
		case w.Code == http.StatusCreated && w.Body.Len() == 0 && w.Header().Get(idempotency.HeaderBodyOmitted) != "":
			hashed++
		default:
			t.Fatalf("replay %d: %d, %d bytes, headers %v", i, w.Code, w.Body.Len(), w.Header())
		}
	}
	// 1/100 of the default 64 MiB holds about ten such responses.
	quota := int(ledger.DefaultMaxBytes / 100 / len(body))
	if whole > quota || hashed == 0 {
		t.Fatalf("%d replays with their body, %d as a hash; want at most %d with it", whole, hashed, quota)
	}
	if w := send("bystander", "b1"); w.Code != http.StatusCreated || w.Body.String() != body {
		t.Fatalf("another tenant: %d, %d bytes; want 201 with its body", w.Code, w.Body.Len())
	}
	if w := send("bystander", "b1"); w.Body.String() != body {
		t.Fatalf("another tenant's replay: %d bytes; want its body, stored whole", w.Body.Len())
	}
	if n := runs.Load(); n != inFlight+1 {
		t.Fatalf("handler ran %d times; want %d", n, inFlight+1)
	}
}
