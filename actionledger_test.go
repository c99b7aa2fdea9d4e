package retrybudget

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger/ledgertest"
	"github.com/retrybudget/retrybudget/limiter"

	"github.com/retrybudget/retrybudget/budget"
	"github.com/retrybudget/retrybudget/ledger"
)

// chargeTo sends one payment for act to url through tr with body.
func chargeTo(t *testing.T, tr http.RoundTripper, url string, act Action, body string) (*http.Response, error) {
	t.Helper()
	return send(WithAction(context.Background(), act), t, tr, "POST", url, body)
}

// readAll returns resp's body and its Outcome.
func readAll(t *testing.T, resp *http.Response) (string, Outcome) {
	t.Helper()
	o, _ := OutcomeOf(resp)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return string(b), o
}

func stateOf(t *testing.T, s ledger.Store, act Action) ledger.Record {
	t.Helper()
	r, err := s.Get(context.Background(), act)
	if err != nil {
		t.Fatalf("ledger Get: %v", err)
	}
	return r
}

var order = Action{Tenant: "acme", Operation: "charge", Key: "order-1"}

func testLedgerReplaysACompletedAction(t *testing.T, store ledger.Store) {
	p := newPayments(t, false) // no provider dedup: only the ledger prevents a second effect
	var verdicts []string
	tr, _ := newFakeTransport(Config{Ledger: LedgerConfig{Store: store}, Observer: Observer{Ledger: func(e LedgerEvent) { verdicts = append(verdicts, e.Verdict.String()) }}})
	first, err := chargeTo(t, tr, p.URL, order, `{"amount":100}`)
	if err != nil {
		t.Fatal(err)
	}
	body1, o1 := readAll(t, first)
	second, err := chargeTo(t, tr, p.URL, order, `{"amount":100}`)
	if err != nil {
		t.Fatal(err)
	}
	body2, o2 := readAll(t, second)
	if effects, calls := p.total(); effects != 1 || calls != 1 {
		t.Fatalf("effects %d, provider calls %d; want 1, 1", effects, calls)
	}
	if o1.Replayed || !o2.Replayed || second.StatusCode != 201 || body2 != body1 || o2.Err() != nil {
		t.Fatalf("replay: status %d body %q replayed %v err %v; want 201 %q replayed", second.StatusCode, body2, o2.Replayed, o2.Err(), body1)
	}
	if second.Header.Get("Set-Cookie") != "" || second.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("replayed headers %v; want Content-Type kept, Set-Cookie never stored", second.Header)
	}
	if r := stateOf(t, store, order); r.State != ledger.StateCompleted {
		t.Fatalf("state %v; want completed", r.State)
	}
	if strings.Join(verdicts, ",") != "created,replayed" {
		t.Fatalf("ledger events %v; want created, replayed", verdicts)
	}
}

func testLedgerConflictOnChangedPayload(t *testing.T, store ledger.Store) {
	p := newPayments(t, false)
	var verdicts []string
	tr, _ := newFakeTransport(Config{Ledger: LedgerConfig{Store: store}, Observer: Observer{Ledger: func(e LedgerEvent) { verdicts = append(verdicts, e.Verdict.String()) }}})
	resp, err := chargeTo(t, tr, p.URL, order, `{"amount":100}`)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	_, err = chargeTo(t, tr, p.URL, order, `{"amount":999}`)
	var e *Error
	if !errors.Is(err, ErrConflict) || !errors.Is(err, ledger.ErrConflict) || !errors.As(err, &e) || e.Attempts != 0 || e.Class != ClassBusiness {
		t.Fatalf("error %v; want ErrConflict with no attempt", err)
	}
	if _, calls := p.total(); calls != 1 {
		t.Fatalf("provider called %d times; want 1 (never for the conflict)", calls)
	}
	if strings.Join(verdicts, ",") != "created,conflict" {
		t.Fatalf("ledger events %v; want created, conflict", verdicts)
	}
}

func testLedgerOneOfFiftyConcurrentSubmissionsIsSent(t *testing.T, store ledger.Store) {
	p := newPayments(t, false)
	release := make(chan struct{})
	p.mu.Lock()
	p.hold = func() { <-release } // keep the winner in flight while the others arrive
	p.mu.Unlock()
	tr, _ := newFakeTransport(Config{Ledger: LedgerConfig{Store: store}})
	var wg sync.WaitGroup
	var mu sync.Mutex
	results := map[string]int{}
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := chargeTo(t, tr, p.URL, order, `{"amount":100}`)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, ErrPending):
				results["pending"]++
			case err != nil:
				t.Error(err)
			default:
				_, o := readAll(t, resp)
				if o.Replayed {
					results["replayed"]++
				} else {
					results["sent"]++
				}
			}
		}()
	}
	// Wait until the 49 losers have their answers; then let the winner go.
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return results["pending"]+results["replayed"] == 49 })
	close(release)
	wg.Wait()
	if effects, calls := p.total(); effects != 1 || calls != 1 || results["sent"] != 1 {
		t.Fatalf("effects %d, calls %d, results %v; want exactly one sent", effects, calls, results)
	}
}

// waitFor polls cond until it holds, failing after 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

func testLedgerLostResponseOneEffect(t *testing.T, store ledger.Store) {
	p := newPayments(t, true)
	p.mu.Lock()
	p.fault = func(n int) string {
		if n == 1 {
			return "lost"
		}
		return ""
	}
	p.mu.Unlock()
	tr, _ := newFakeTransport(Config{Ledger: LedgerConfig{Store: store}})
	resp, err := chargeTo(t, tr, p.URL, order, `{"amount":100}`)
	if err != nil {
		t.Fatal(err)
	}
	_, o := readAll(t, resp)
	r := stateOf(t, store, order)
	if effects, _ := p.total(); effects != 1 || o.Attempts != 2 || r.State != ledger.StateCompleted {
		t.Fatalf("effects %d attempts %d state %v; want 1, 2, completed", effects, o.Attempts, r.State)
	}
}

func testLedgerRepeated429sKeepOneIdentity(t *testing.T, store ledger.Store) {
	p := newPayments(t, true)
	p.mu.Lock()
	p.fault = func(n int) string {
		if n <= 3 {
			return "429"
		}
		return ""
	}
	p.mu.Unlock()
	tr, _ := newFakeTransport(Config{Ledger: LedgerConfig{Store: store}, MaxAttempts: 2, Budget: budget.Unlimited{}})
	// First call: two 429s, gives up; the record must survive as failed
	// (no effect), keeping the action's identity.
	resp, err := chargeTo(t, tr, p.URL, order, `{"amount":100}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, o := readAll(t, resp); !errors.Is(o.Reason, ErrAttemptsExhausted) {
		t.Fatalf("reason %v; want attempts exhausted", o.Reason)
	}
	if r := stateOf(t, store, order); r.State != ledger.StateFailed {
		t.Fatalf("state %v after 429s; want failed (no effect)", r.State)
	}
	// The job queue runs it again: one more 429, then success.
	resp, err = chargeTo(t, tr, p.URL, order, `{"amount":100}`)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	r := stateOf(t, store, order)
	sends := 0
	for _, a := range r.Attempts {
		if a.Class == ClassCapacity.String() || a.Class == ClassSuccess.String() {
			sends++
		}
	}
	if effects, _ := p.total(); effects != 1 || r.State != ledger.StateCompleted || sends != 4 {
		t.Fatalf("effects %d state %v sends recorded %d (%+v); want 1, completed, 4", effects, r.State, sends, r.Attempts)
	}
}

func TestLedgerExpiredRecordRunsAsNewAction(t *testing.T) {
	p := newPayments(t, false)
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	store := ledger.NewMemory(ledger.MemoryConfig{Config: ledger.Config{Retention: time.Hour}, Now: clock})
	tr, _ := newFakeTransport(Config{Ledger: LedgerConfig{Store: store}})
	for i := range 2 {
		resp, err := chargeTo(t, tr, p.URL, order, `{"amount":100}`)
		if err != nil {
			t.Fatal(err)
		}
		_, o := readAll(t, resp)
		if o.Replayed {
			t.Fatalf("call %d replayed; want a new action after the retention", i)
		}
		mu.Lock()
		now = now.Add(2 * time.Hour)
		mu.Unlock()
	}
	if effects, _ := p.total(); effects != 2 {
		t.Fatalf("effects %d; want 2: past retention the same key is a new action (documented)", effects)
	}
}

func testLedgerLongCallKeepsItsLease(t *testing.T, store ledger.Store) {
	// Real time is the point: the lease must outlive a slow attempt.
	p := newPayments(t, false)
	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	p.mu.Lock()
	// Only the first arrival is held: a second one (a regression) is
	// counted as an effect instead of waiting behind the first forever.
	p.hold = func() {
		first := false
		once.Do(func() { first = true; close(arrived) })
		if first {
			<-release
		}
	}
	p.mu.Unlock()
	// The lease is long enough that a stall of a few hundred milliseconds
	// on a loaded machine does not let it lapse between renewals.
	const lease = 600 * time.Millisecond
	cfg := Config{Ledger: LedgerConfig{Store: store, Lease: lease}, KeysHonoured: true}
	done := make(chan error, 1)
	go func() {
		resp, err := chargeTo(t, New(cfg), p.URL, order, `{"amount":100}`)
		if err == nil {
			readAll(t, resp)
		}
		done <- err
	}()
	<-arrived
	// Three leases later, a second worker must still see the action as
	// pending: it was renewed, not abandoned.
	deadline := time.Now().Add(3 * lease)
	for time.Now().Before(deadline) {
		_, err := chargeTo(t, New(cfg), p.URL, order, `{"amount":100}`)
		if !errors.Is(err, ErrPending) {
			close(release)
			t.Fatalf("second worker got %v while the first was still in its call; want ErrPending", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if effects, calls := p.total(); effects != 1 || calls != 1 {
		t.Fatalf("effects %d calls %d; want 1, 1", effects, calls)
	}
}

// ledgerStores gives each Transport-level ledger test a fresh store of every
// kind: memory, a real Redis, and a local 3-master Redis Cluster.
func ledgerStores(t *testing.T) map[string]func(t *testing.T) ledger.Store {
	cluster := redistest.StartCluster(t)
	return map[string]func(t *testing.T) ledger.Store{
		"memory": func(t *testing.T) ledger.Store { return ledger.NewMemory(ledger.MemoryConfig{}) },
		"redis": func(t *testing.T) ledger.Store {
			return ledgertest.Redis(t, redistest.Client(t), redistest.Prefix(t))
		},
		"cluster": func(t *testing.T) ledger.Store {
			return ledgertest.Redis(t, cluster.Client(t), redistest.Prefix(t))
		},
	}
}

// TestLedgerTransport runs the Transport's ledger contract over every store.
func TestLedgerTransport(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, store ledger.Store)
	}{
		{"replays a completed action", testLedgerReplaysACompletedAction},
		{"conflict on a changed payload", testLedgerConflictOnChangedPayload},
		{"one of fifty concurrent submissions is sent", testLedgerOneOfFiftyConcurrentSubmissionsIsSent},
		{"lost response, one effect", testLedgerLostResponseOneEffect},
		{"repeated 429s keep one identity", testLedgerRepeated429sKeepOneIdentity},
		{"a long call keeps its lease", testLedgerLongCallKeepsItsLease},
		{"a rate-limited call keeps its record", testLedgerRateLimitedCallKeepsItsRecord},
	}
	stores := ledgerStores(t)
	for _, kind := range []string{"memory", "redis", "cluster"} {
		for _, tt := range tests {
			t.Run(kind+"/"+tt.name, func(t *testing.T) { tt.run(t, stores[kind](t)) })
		}
	}
}

func testLedgerRateLimitedCallKeepsItsRecord(t *testing.T, store ledger.Store) {
	p := newPayments(t, false)
	// The limiter first refuses with a wait past MaxWait, then allows.
	lim := &scriptedLimiter{decisions: []limiter.Decision{{RetryAfter: time.Hour}, allow}}
	tr, _ := newFakeTransport(Config{Ledger: LedgerConfig{Store: store}, Limiter: lim})
	_, err := chargeTo(t, tr, p.URL, order, `{"amount":100}`)
	if !errors.Is(err, ErrRateLimited) {
		t.Fatalf("error %v; want ErrRateLimited", err)
	}
	first := stateOf(t, store, order)
	if first.State != ledger.StateFailed {
		t.Fatalf("state %v after a rate-limited call; want failed (no effect), the record kept", first.State)
	}
	resp, err := chargeTo(t, tr, p.URL, order, `{"amount":100}`)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	r := stateOf(t, store, order)
	effects, calls := p.total()
	if effects != 1 || calls != 1 || r.State != ledger.StateCompleted || !r.CreatedAt.Equal(first.CreatedAt) {
		t.Fatalf("effects %d calls %d state %v created %v (was %v); want one effect, completed, the same record",
			effects, calls, r.State, r.CreatedAt, first.CreatedAt)
	}
	var classes []string
	for _, a := range r.Attempts {
		classes = append(classes, a.Class)
	}
	if got := strings.Join(classes, ","); got != "created,retry,success" {
		t.Fatalf("history %s; want created,retry,success", got)
	}
}
