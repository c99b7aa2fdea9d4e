package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/idempotency"
	"github.com/retrybudget/retrybudget/ledger/pgledger/pgtest"
)

// shot is one request of a burst, as the client saw it.
type shot struct {
	key     string
	status  int
	problem string
	took    time.Duration
	err     error
	busy    int // 503 TypeBusy answers it was sent again after
}

// post sends the activation of campaign i under key to srv as tenant_a.
func post(srv *httptest.Server, key string, i int) (status int, problem string, err error) {
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/campaign-activations",
		strings.NewReader(body(fmt.Sprint("campaign_", i), 1, "audience_28")))
	req.Header.Set("Authorization", "Bearer token_a")
	req.Header.Set("Idempotency-Key", key)
	resp, err := srv.Client().Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var p retrybudget.Problem
	if json.Unmarshal(b, &p) == nil {
		problem = p.Type
	}
	return resp.StatusCode, problem, nil
}

// burst posts one activation per key to each server in srvs, all at once,
// and returns every answer.
func burst(srvs []*httptest.Server, keys []string) []shot {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var out []shot
	start := make(chan struct{})
	for i, key := range keys {
		for _, srv := range srvs {
			wg.Go(func() {
				<-start
				s := shot{key: key}
				t0 := time.Now()
				// A client that honours 503 TypeBusy's Retry-After (1s),
				// as the library's own Transport does, a few times.
				for try := 0; try < 5; try++ {
					s.status, s.problem, s.err = post(srv, key, i)
					if s.err != nil || s.status != http.StatusServiceUnavailable || s.problem != idempotency.TypeBusy {
						break
					}
					s.busy++
					time.Sleep(time.Second) // the answer's Retry-After
				}
				s.took = time.Since(t0)
				mu.Lock()
				out = append(out, s)
				mu.Unlock()
			})
		}
	}
	close(start)
	wg.Wait()
	return out
}

// Atomic mode under ordinary load, with pgx's default pool (max(4,
// NumCPU) connections): each running activation holds a connection for its
// transaction while its own bookkeeping (the destination step's ledger
// writes, lease renewals) needs another. The store bounds its open
// transactions below the pool, so the bookkeeping never waits on a
// connection a transaction holds: 20 new keys at once on one instance all
// end in 201, one sync each, none waiting anything like the 5s store
// timeout. A request over the bound is answered 503 TypeBusy at once, and
// the client sends it again after its Retry-After, as the Transport does.
func TestAtomicBurstOnOneInstance(t *testing.T) {
	f := newFleetOn(t, pgtest.URL(t))
	keys := make([]string, 20)
	for i := range keys {
		keys[i] = fmt.Sprint("burst-", i)
	}
	var slowest time.Duration
	busy := 0
	for _, s := range burst([]*httptest.Server{f.b}, keys) {
		if s.err != nil || s.status != http.StatusCreated {
			t.Errorf("key %s: %d %s %v; want 201", s.key, s.status, s.problem, s.err)
		}
		slowest, busy = max(slowest, s.took), busy+s.busy
	}
	wantStats(t, f.stats(t), 20, 20)
	if n := f.activationRows(t); n != 20 {
		t.Errorf("%d activations stored; want 20", n)
	}
	if slowest > 8*time.Second {
		t.Errorf("slowest answer after %v; want well under the store timeouts that held it before", slowest)
	}
	t.Logf("20 new keys at once on one instance: slowest answer after %v, %d busy answers sent again", slowest.Round(time.Millisecond), busy)
}

// Two instances, 20 keys each sent to both at once: every key ends in
// exactly one 201 and one sync; the other copy is told the action is in
// progress (409 TypePending) or, when it came after, gets the replay; no
// copy sees the ledger as unavailable (a 503 TypeBusy is sent again after
// its Retry-After, as a client honouring it does).
func TestAtomicBurstOnTwoInstances(t *testing.T) {
	f := newFleetOn(t, pgtest.URL(t))
	keys := make([]string, 20)
	for i := range keys {
		keys[i] = fmt.Sprint("both-", i)
	}
	created := map[string]int{}
	for _, s := range burst([]*httptest.Server{f.a, f.b}, keys) {
		switch {
		case s.err != nil:
			t.Errorf("key %s: %v", s.key, s.err)
		case s.status == http.StatusCreated:
			created[s.key]++
		case s.status == http.StatusConflict && s.problem == idempotency.TypePending:
		default:
			t.Errorf("key %s: %d %s; want 201, or 409 TypePending", s.key, s.status, s.problem)
		}
	}
	for _, k := range keys {
		if created[k] < 1 {
			t.Errorf("key %s: no 201", k)
		}
	}
	wantStats(t, f.stats(t), 20, 20)
	if n := f.activationRows(t); n != 20 {
		t.Errorf("%d activations stored; want 20", n)
	}
}
