package retrybudget

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/retrybudget/retrybudget/budget"
)

func TestIdempotencyKeyIsStableAndDistinct(t *testing.T) {
	a := Action{Tenant: "acme", Operation: "charge", Key: "order-1"}
	if a.IdempotencyKey() != (Action{Tenant: "acme", Operation: "charge", Key: "order-1"}).IdempotencyKey() {
		t.Fatal("the same action gave two keys")
	}
	if _, err := uuid.Parse(a.IdempotencyKey()); err != nil {
		t.Fatalf("key %q is not a UUID: %v", a.IdempotencyKey(), err)
	}
	distinct := []Action{
		a,
		{Tenant: "globex", Operation: "charge", Key: "order-1"},
		{Tenant: "acme", Operation: "refund", Key: "order-1"},
		{Tenant: "acme", Operation: "charge", Key: "order-2"},
		// Shifting a separator between fields must not collide.
		{Tenant: "acme:charge", Operation: "", Key: "order-1"},
		{Tenant: "acme", Operation: "charge:order-1", Key: ""},
		{Tenant: "", Operation: "acme", Key: "charge"},
	}
	seen := map[string]Action{}
	for _, x := range distinct {
		k := x.IdempotencyKey()
		if prev, dup := seen[k]; dup {
			t.Fatalf("actions %+v and %+v share key %s", prev, x, k)
		}
		seen[k] = x
	}
}

func TestActionKeySurvivesARestart(t *testing.T) {
	// Two Transports stand for a worker before and after a crash: the
	// re-submitted action must carry the same key to the provider.
	p := newProvider(t, status(200))
	act := Action{Tenant: "acme", Operation: "charge", Key: "order-7"}
	for i := 0; i < 2; i++ {
		tr, _ := newFakeTransport(Config{})
		resp, err := send(WithAction(context.Background(), act), t, tr, "POST", p.URL, "x")
		if err != nil {
			t.Fatal(err)
		}
		finalOutcome(t, resp)
	}
	r := p.requests()
	if len(r) != 2 || r[0].key != act.IdempotencyKey() || r[1].key != r[0].key {
		t.Fatalf("keys %q, %q; want %q twice", r[0].key, r[1].key, act.IdempotencyKey())
	}
}

func TestKeyHeaderIsConfigurable(t *testing.T) {
	var got string
	p := newProvider(t, func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("PayPal-Request-Id")
		w.WriteHeader(201)
	})
	tr, _ := newFakeTransport(Config{KeyHeader: "paypal-request-id"})
	act := Action{Tenant: "acme", Operation: "capture", Key: "o-1"}
	resp, err := send(WithAction(context.Background(), act), t, tr, "POST", p.URL, "x")
	if err != nil {
		t.Fatal(err)
	}
	finalOutcome(t, resp)
	if got != act.IdempotencyKey() {
		t.Fatalf("PayPal-Request-Id %q; want %q", got, act.IdempotencyKey())
	}
}

func TestIdempotentMethodsGetNoGeneratedKey(t *testing.T) {
	for _, m := range []string{"GET", "HEAD", "OPTIONS", "PUT", "DELETE"} {
		p := newProvider(t, status(200))
		tr, _ := newFakeTransport(Config{})
		resp, err := send(context.Background(), t, tr, m, p.URL, "")
		if err != nil {
			t.Fatal(err)
		}
		if o := finalOutcome(t, resp); o.Key != "" || p.requests()[0].key != "" {
			t.Fatalf("%s sent key %q; want none", m, p.requests()[0].key)
		}
	}
}

func TestConcurrentPostsGetDistinctKeysKeptAcrossRetries(t *testing.T) {
	// Each key fails once with 503, then succeeds.
	var mu sync.Mutex
	first := map[string]bool{}
	p := newProvider(t, func(w http.ResponseWriter, r *http.Request) {
		k := r.Header.Get("Idempotency-Key")
		mu.Lock()
		again := first[k]
		first[k] = true
		mu.Unlock()
		if !again {
			w.WriteHeader(503)
			return
		}
		w.WriteHeader(201)
	})
	tr, _ := newFakeTransport(Config{Budget: budget.Unlimited{}}) // every call retries once, by design
	const n = 20
	keys := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", p.URL, strings.NewReader("pay"))
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Error(err)
				return
			}
			o, _ := OutcomeOf(resp)
			resp.Body.Close()
			if resp.StatusCode != 201 || o.Attempts != 2 {
				t.Errorf("status %d after %d attempts; want 201 after 2", resp.StatusCode, o.Attempts)
			}
			keys[i] = o.Key
		}()
	}
	wg.Wait()
	perKey := map[string]int{}
	for _, r := range p.requests() {
		perKey[r.key]++
	}
	if len(perKey) != n {
		t.Fatalf("%d distinct keys reached the provider; want %d", len(perKey), n)
	}
	for _, k := range keys {
		if perKey[k] != 2 {
			t.Fatalf("key %q seen %d times; want 2 (first attempt and its retry)", k, perKey[k])
		}
	}
}

func TestInvalidAction(t *testing.T) {
	tr, _ := newFakeTransport(Config{})
	ctx := WithAction(context.Background(), Action{Tenant: "t", Operation: "op"})
	_, err := send(ctx, t, tr, "POST", "http://127.0.0.1:1/", "x")
	if !errors.Is(err, ErrInvalidAction) {
		t.Fatalf("error %v; want ErrInvalidAction", err)
	}
}
