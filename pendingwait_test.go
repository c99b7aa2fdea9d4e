package retrybudget

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// timedProvider answers every charge after a service time spent on the
// Transport's fake clock (no real waiting), and holds the request of the
// key named hold until release is closed.
type timedProvider struct {
	*httptest.Server
	clk     *fakeClock
	arrived chan struct{} // closed when the held request arrived
	release chan struct{}

	mu      sync.Mutex // guards took and hold
	took    map[string]time.Duration
	hold    string
	effects map[string]int
}

func newTimedProvider(t *testing.T, clk *fakeClock) *timedProvider {
	p := &timedProvider{clk: clk, took: map[string]time.Duration{}, effects: map[string]int{},
		arrived: make(chan struct{}), release: make(chan struct{})}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		tenant := r.URL.Query().Get("tenant")
		key := r.Header.Get("Idempotency-Key")
		p.mu.Lock()
		d, held := p.took[tenant], p.hold == key
		p.effects[key]++
		p.mu.Unlock()
		if held {
			close(p.arrived)
			<-p.release
		}
		p.clk.Sleep(context.Background(), d) // the service time, on the fake clock
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"charge":%q}`, key)
	}))
	t.Cleanup(func() {
		select {
		case <-p.release:
		default:
			close(p.release)
		}
		p.Close()
	})
	return p
}

// charge sends act to the provider and returns the Outcome or the error.
func (p *timedProvider) charge(t *testing.T, tr http.RoundTripper, act Action) (Outcome, error) {
	t.Helper()
	return chargeCtx(context.Background(), t, tr, p.URL+"/charges?tenant="+act.Tenant, act)
}

// A job delivered twice: the duplicate finds the first call running and
// is told ErrPending with RetryAt when the first can have finished, from
// the usual time of that tenant's calls of that operation, not at the end
// of the first's 30 s lease; coming back then, it gets the stored answer.
// A slow tenant does not move another's estimate. Failure pinned: RetryAt
// was the lease's end, 30 s away, though the first call took 300 ms.
func TestPendingDuplicateComesBackWhenTheOwnerCanHaveFinished(t *testing.T) {
	const took = 300 * time.Millisecond
	clk := newFakeClock()
	store := ledger.NewMemory(ledger.MemoryConfig{Now: clk.Now})
	tr := newTransport(Config{Ledger: LedgerConfig{Store: store}}, clk)
	p := newTimedProvider(t, clk)
	p.took["acme"], p.took["globex"] = took, 20*time.Second
	// The usual calls: acme's take 300 ms, globex's 20 s.
	for i := range 3 {
		for _, tenant := range []string{"acme", "globex"} {
			if _, err := p.charge(t, tr, Action{Tenant: tenant, Operation: "charge", Key: fmt.Sprintf("warm-%d", i)}); err != nil {
				t.Fatal(err)
			}
		}
	}

	job := Action{Tenant: "acme", Operation: "charge", Key: "job-1"}
	p.mu.Lock()
	p.hold = job.IdempotencyKey()
	p.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		_, err := p.charge(t, tr, job)
		done <- err
	}()
	<-p.arrived
	asked := clk.Now()
	_, err := p.charge(t, tr, job)
	var e *Error
	if !errors.Is(err, ErrPending) || !errors.As(err, &e) {
		t.Fatalf("duplicate: %v, want ErrPending", err)
	}
	wait := e.RetryAt.Sub(asked)
	t.Logf("duplicate told pending: RetryAt %s away (the first call takes %s; lease %s)", wait, took, ledger.DefaultLease)
	if wait < took/2 || wait > 2*took {
		t.Fatalf("RetryAt %s away; want about the %s the first call takes, never the lease", wait, took)
	}

	close(p.release)
	if err := <-done; err != nil {
		t.Fatalf("the first call: %v", err)
	}
	if now := clk.Now(); now.Before(e.RetryAt) {
		clk.Sleep(context.Background(), e.RetryAt.Sub(now)) // the worker comes back at RetryAt
	}
	o, err := p.charge(t, tr, job)
	if err != nil || !o.Replayed {
		t.Fatalf("back at RetryAt: %v, replayed %t; want the stored answer", err, o.Replayed)
	}
	p.mu.Lock()
	n := p.effects[job.IdempotencyKey()]
	p.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d charges for the job, want 1", n)
	}
}
