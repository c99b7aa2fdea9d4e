package idempotency_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/idempotency"
	"github.com/retrybudget/retrybudget/ledger"
)

func ExampleNew() {
	store := ledger.NewMemory(ledger.MemoryConfig{})
	guard := idempotency.New(idempotency.Config{
		Store: store,
		// The account an authentication middleware put in the context;
		// a header stands in for it here.
		Tenant: func(r *http.Request) string { return r.Header.Get("X-Account") },
	})
	activations := 0
	mux := http.NewServeMux()
	mux.Handle("POST /api/v1/campaign-activations", guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		activations++
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", "/api/v1/campaign-activations/act_1")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"activation_id":"act_1","state":"completed"}`)
	})))

	send := func(key, body string) {
		r := httptest.NewRequest("POST", "/api/v1/campaign-activations", strings.NewReader(body))
		r.Header.Set("X-Account", "tenant_a")
		if key != "" {
			r.Header.Set("Idempotency-Key", key)
		}
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		if w.Header().Get("Content-Type") == "application/problem+json" {
			var p retrybudget.Problem
			_ = json.Unmarshal(w.Body.Bytes(), &p)
			fmt.Println(w.Code, strings.TrimPrefix(p.Type, "https://pkg.go.dev/github.com/retrybudget/retrybudget/idempotency#"))
			return
		}
		fmt.Println(w.Code, w.Body, "replayed:", w.Header().Get(idempotency.HeaderReplayed) == "true")
	}
	body := `{"campaign_id":"campaign_19","revision":4,"audience_id":"audience_28"}`
	send("tenant_a:campaign_19:revision_4", body)
	send("tenant_a:campaign_19:revision_4", body)
	send("tenant_a:campaign_19:revision_4", `{"campaign_id":"campaign_19","revision":5,"audience_id":"audience_28"}`)
	send("", body)
	send(`"unterminated`, body)
	fmt.Println("activations:", activations)
	// Output:
	// 201 {"activation_id":"act_1","state":"completed"} replayed: false
	// 201 {"activation_id":"act_1","state":"completed"} replayed: true
	// 422 TypeConflict
	// 400 TypeMissingKey
	// 400 TypeMalformedKey
	// activations: 1
}

func ExampleOutbound() {
	inbound := retrybudget.Action{Tenant: "tenant_a", Operation: "POST /api/v1/campaign-activations", Key: "tenant_a:campaign_19:revision_4"}
	created := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) // the inbound record's CreatedAt
	call, _ := idempotency.Outbound(inbound, created, "destination")
	fmt.Println(call.Operation)
	fmt.Println(call.Key)
	fmt.Println("own provider key:", call.IdempotencyKey() != inbound.IdempotencyKey())
	again, _ := idempotency.Outbound(inbound, created, "destination")
	fmt.Println("stable:", again.IdempotencyKey() == call.IdempotencyKey())
	// A new record under the key, once this one expired, is a new action.
	next, _ := idempotency.Outbound(inbound, created.Add(25*time.Hour), "destination")
	fmt.Println("new action, new provider key:", next.IdempotencyKey() != call.IdempotencyKey())
	// Output:
	// POST /api/v1/campaign-activations -> destination
	// tenant_a:campaign_19:revision_4#1772366400000000
	// own provider key: true
	// stable: true
	// new action, new provider key: true
}

func ExampleWithStep() {
	// A store clock fixed for the example's output: the derived key ends
	// in the inbound record's creation time.
	created := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	store := ledger.NewMemory(ledger.MemoryConfig{Now: func() time.Time { return created }})
	guard := idempotency.New(idempotency.Config{Store: store, Tenant: accountOf})
	h := guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Calls made with ctx through a retrybudget.Transport carry the
		// derived action, and so its idempotency key.
		ctx, err := idempotency.WithStep(r.Context(), "destination")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		a, _ := retrybudget.ActionFrom(ctx)
		fmt.Printf("%q %q\n", a.Operation, a.Key)
	}))
	mux := http.NewServeMux()
	mux.Handle("POST /api/v1/campaign-activations", h)
	r := httptest.NewRequest("POST", "/api/v1/campaign-activations", strings.NewReader("{}"))
	r.Header.Set("Idempotency-Key", `"tenant_a:campaign_19:revision_4"`)
	mux.ServeHTTP(httptest.NewRecorder(), r)
	// Output:
	// "POST /api/v1/campaign-activations -> destination" "tenant_a:campaign_19:revision_4#1772366400000000"
}

func ExampleParseKey() {
	for _, v := range []string{
		`"8e03978e-40d5-43e8"`,
		`tenant_a:campaign_19:revision_4`,
		`550e8400-e29b-41d4-a716-446655440000`,
		`"a";v=1`,
	} {
		k, err := idempotency.ParseKey([]string{v}, 0)
		fmt.Printf("%q %v\n", k, err)
	}
	// Output:
	// "8e03978e-40d5-43e8" <nil>
	// "tenant_a:campaign_19:revision_4" <nil>
	// "550e8400-e29b-41d4-a716-446655440000" <nil>
	// "" idempotency: malformed idempotency key: parameters are not accepted
}

func ExampleMarkEffect() {
	guard := idempotency.New(idempotency.Config{Tenant: accountOf})
	runs := 0
	h := guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs++
		// The row is about to be written; from here on a failure may
		// leave it behind. Without the mark, write nothing.
		if err := idempotency.MarkEffect(r.Context()); err != nil {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		http.Error(w, "mail queue down", http.StatusServiceUnavailable)
	}))
	for range 2 {
		r := httptest.NewRequest("POST", "/invites", strings.NewReader("{}"))
		r.Header.Set("Idempotency-Key", "invite-7")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(w.Code, w.Header().Get("Content-Type"))
	}
	fmt.Println("runs:", runs)
	// Output:
	// 503 text/plain; charset=utf-8
	// 409 application/problem+json
	// runs: 1
}

// accountOf stands in for reading the account that an authentication
// middleware put in the request's context.
func accountOf(*http.Request) string { return "acct_1" }

func ExampleCredentialTenant() {
	// A per-deployment secret, from the environment or a secret manager in
	// a real service.
	secret := []byte("example-deployment-secret-32bytes")
	tenant, err := idempotency.CredentialTenant(secret, "X-Api-Key", "Authorization")
	if err != nil {
		panic(err)
	}
	guard := idempotency.New(idempotency.Config{Tenant: tenant})
	h := guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	}))
	for _, apiKey := range []string{"key_a", "key_b", ""} {
		r := httptest.NewRequest("POST", "/charges", strings.NewReader(`{"amount":100}`))
		r.Header.Set("Idempotency-Key", "charge-1")
		if apiKey != "" {
			r.Header.Set("X-Api-Key", apiKey)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(w.Code)
	}
	// Output:
	// 201
	// 201
	// 403
}
