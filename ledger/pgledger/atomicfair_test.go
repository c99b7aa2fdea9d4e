package pgledger_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/idempotency"
	"github.com/retrybudget/retrybudget/ledger/pgledger"
)

// postAs sends POST /effects with key as tenant; the answer's body is its
// problem type.
func postAs(t *testing.T, url, tenant, key string) (answer, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/effects", strings.NewReader(`{"n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("X-Tenant", tenant)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, body: problemType(string(b))}, err
}

// One tenant's slow Atomic requests cannot take every transaction slot: with
// a pool of 10 (MaxAtomic 8) and one tenant's 8 handlers running as long as
// they like, another tenant's Atomic request is still served, not answered
// 503 TypeBusy once AtomicWait (1 s) has passed.
func TestAtomicSlotsAreSharedOutByTenant(t *testing.T) {
	db := newEffectsDB(t)
	url := db.url
	if strings.Contains(url, "?") {
		url += "&pool_max_conns=10"
	} else {
		url += "?pool_max_conns=10"
	}
	pool := effectsDB{url: url, schema: db.schema}.open(t, "")
	if n := pool.Stat().MaxConns(); n != 10 {
		t.Fatalf("pool of %d; want 10", n)
	}
	entered, release := make(chan struct{}, 8), make(chan struct{})
	srv := httptest.NewServer(idempotency.New(idempotency.Config{
		Store:  unmigrated(t, pool, pgledger.Config{Timeout: 2 * time.Second}),
		Atomic: true,
		Tenant: func(r *http.Request) string { return r.Header.Get("X-Tenant") },
		Owner:  "server",
	})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Tenant") == "slow" {
			entered <- struct{}{}
			<-release // a slow handler, as long as the test likes
		}
		w.WriteHeader(http.StatusCreated)
	})))
	defer srv.Close()

	const slow = 8
	answers := make(chan answer, slow)
	for i := range slow {
		go func() {
			a, err := postAs(t, srv.URL, "slow", fmt.Sprint("s", i))
			if err != nil {
				a.body = err.Error()
			}
			answers <- a
		}()
	}
	// Every one of the slow tenant's requests holds a slot, or was
	// refused.
	var running, refused int
	for running+refused < slow {
		select {
		case <-entered:
			running++
		case a := <-answers:
			refused++
			if a.status != http.StatusServiceUnavailable || a.body != idempotency.TypeBusy {
				t.Errorf("a slow tenant's request answered %d %s; want 503 TypeBusy or to run", a.status, a.body)
			}
		case <-time.After(guardWait):
			t.Fatalf("%d of %d slow requests running or answered", running+refused, slow)
		}
	}
	start := time.Now()
	victim, err := postAs(t, srv.URL, "victim", "v1")
	took := time.Since(start)
	close(release)
	for range running {
		<-answers
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("slow tenant: %d running, %d refused; the other tenant's request answered %d %s after %v",
		running, refused, victim.status, victim.body, took.Round(time.Millisecond))
	if victim.status != http.StatusCreated {
		t.Fatalf("the other tenant's request answered %d %s after %v; want 201", victim.status, victim.body, took)
	}
}

// guardWait bounds how long a test waits for an event that should come
// within AtomicWait; it only turns a deadlock into a failure.
const guardWait = 30 * time.Second
