package retrybudget

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/ledgertest"
)

// reclaimActions are the eight actions a worker holds when it is killed:
// three the provider applied without answering, three it received and
// never applied, two reserved and never sent (held by the limiter before
// the sending mark).
var reclaimActions = func() []Action {
	var acts []Action
	for i := 1; i <= 6; i++ {
		acts = append(acts, Action{Tenant: "acme", Operation: "charge", Key: fmt.Sprintf("order-%d", i)})
	}
	for i := 7; i <= 8; i++ {
		acts = append(acts, Action{Tenant: "held", Operation: "charge", Key: fmt.Sprintf("order-%d", i)})
	}
	return acts
}()

// hangingProvider is a fake payment provider that does not deduplicate:
// every request it applies is one more effect. The first request of a key
// named in hang is received and then never answered ("applied": after the
// effect, "received": without it, "late": applied lateBy after the
// worker's connection closed, as a provider still processing it does), as
// when the worker dies mid-call.
type hangingProvider struct {
	*httptest.Server
	arrived chan string    // the keys of requests left hanging
	late    sync.WaitGroup // the late effects still to be applied
	mu      sync.Mutex     // guards all below
	hang    map[string]string
	effects map[string]int
	calls   int
}

// lateBy is how long after the worker's death a "late" request is applied.
const lateBy = 2 * time.Second

func newHangingProvider(t *testing.T, hang map[string]string) *hangingProvider {
	p := &hangingProvider{arrived: make(chan string, len(hang)), hang: hang, effects: map[string]int{}}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.Close)
	return p
}

func (p *hangingProvider) serve(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	key := r.Header.Get("Idempotency-Key")
	p.mu.Lock()
	p.calls++
	mode := p.hang[key]
	delete(p.hang, key)
	if mode != "received" && mode != "late" {
		p.effects[key]++
	}
	if mode == "late" {
		p.late.Add(1)
	}
	p.mu.Unlock()
	if mode != "" {
		p.arrived <- key
		<-r.Context().Done() // the worker's connection closes when it dies
		if mode == "late" {
			time.AfterFunc(lateBy, func() {
				p.mu.Lock()
				p.effects[key]++
				p.mu.Unlock()
				p.late.Done()
			})
		}
		return
	}
	w.WriteHeader(201)
	fmt.Fprintf(w, `{"charge":%q}`, key)
}

// reconciler asks the provider whether it applied the action's key, as a
// GET by idempotency key would.
func (p *hangingProvider) reconciler() ledger.Reconciler { return keyReconciler(&p.mu, p.effects) }

// TestReclaimWorkerChild is the worker process of
// TestRestartedWorkerProcessReclaimsItsActionsAtOnce; it does nothing in a
// normal run. It starts every reclaimAction under the stable owner RB_OWNER
// with 30 s leases and the settle time RB_SETTLE, prints HELD for each call held before its sending
// mark, and waits to be killed.
func TestReclaimWorkerChild(t *testing.T) {
	if os.Getenv(childEnv) != "reclaim-worker" {
		t.Skip("child role of the restarted-worker test")
	}
	lim := newHoldLimiter()
	// RB_SETTLE is the settle time the parent declares for its provider;
	// empty means the default, the lease.
	settle, _ := time.ParseDuration(os.Getenv("RB_SETTLE"))
	tr := New(Config{Ledger: LedgerConfig{Store: childStore(t), Owner: os.Getenv("RB_OWNER"), Lease: 30 * time.Second},
		Limiter: lim, SettleTime: settle})
	for _, act := range reclaimActions {
		go callErr(t, tr, os.Getenv("RB_URL"), act)
	}
	for range 2 {
		<-lim.reached
		fmt.Println("HELD")
	}
	time.Sleep(time.Minute) // the parent kills this process long before
}

// A worker process with a stable Owner is SIGKILLed holding eight actions
// (three applied at the provider and unanswered, three received and not
// applied, two reserved and never sent), then started again: the rerun
// takes all eight over at once instead of waiting out their 30 s leases
// (the three received and not applied after their 1 s settle time), and the
// provider ends with exactly one effect per action.
func TestRestartedWorkerProcessReclaimsItsActionsAtOnce(t *testing.T) {
	// The fake provider never applies a request after its connection
	// closed, so its settle time is short: one second.
	took := restartWorkerProcess(t, "received", time.Second)
	if took > 3*time.Second {
		t.Errorf("rerun took %s, want under 3s: it waited out the leases", took)
	}
}

// The same SIGKILLed worker, but the three requests the provider received
// are applied 2 s after the worker died, as a provider still processing
// them does, and the settle time is the default, the 30 s lease: the rerun
// takes the actions over at once and replays the three applied ones, but
// it does not take the Reconciler's "not found" for the late three until
// their settle time has passed, when it finds them applied. Failure pinned:
// the rerun re-sent the late three at once, 3 duplicate effects.
func TestRestartedWorkerProcessWaitsOutTheSettleTimeOfALateCharge(t *testing.T) {
	took := restartWorkerProcess(t, "late", 0)
	if took < lateBy {
		t.Errorf("rerun took %s: it cannot have seen the late charges", took)
	}
}

// restartWorkerProcess runs a worker process holding reclaimActions, the
// three after the applied ones left as received says, with settle time
// settle, SIGKILLs it, reruns them under the same owner and checks one
// effect per action; it returns how long the rerun took.
func restartWorkerProcess(t *testing.T, received string, settle time.Duration) time.Duration {
	srv := redistest.Start(t)
	prefix := redistest.Prefix(t)
	hang := map[string]string{}
	for i, act := range reclaimActions[:6] {
		hang[act.IdempotencyKey()] = map[bool]string{true: "applied", false: received}[i < 3]
	}
	p := newHangingProvider(t, hang)

	cmd := exec.Command(os.Args[0], "-test.run=^TestReclaimWorkerChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=reclaim-worker", "RB_URL="+p.URL, "RB_REDIS="+srv.Addr,
		"RB_PREFIX="+prefix, "RB_OWNER=pod-1", "RB_SETTLE="+settle.String())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	held := make(chan struct{}, 2)
	go func() {
		for sc := bufio.NewScanner(stdout); sc.Scan(); {
			if sc.Text() == "HELD" {
				held <- struct{}{}
			}
		}
	}()
	bound := time.After(time.Minute) // a bound on a broken child, not a synchronisation
	for range 6 {
		select {
		case <-p.arrived:
		case <-bound:
			t.Fatal("the worker did not reach the provider")
		}
	}
	for range 2 {
		select {
		case <-held:
		case <-bound:
			t.Fatal("the worker did not reserve its held actions")
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	store := ledgertest.Redis(t, srv.Client(t), prefix)
	for i, act := range reclaimActions {
		r, err := store.Get(context.Background(), act)
		if err != nil || r.State != ledger.StateInProgress || r.Owner != "pod-1" || r.Sending != (i < 6) {
			t.Fatalf("%s after the kill: %+v (%v); want in progress under pod-1, sending %t", act.Key, r, err, i < 6)
		}
	}

	// The rerun: a new process instance under the same owner, asking the
	// provider about what may have been sent. A worker that is told
	// "pending" comes back at RetryAt, as a job queue would.
	tr := New(Config{Ledger: LedgerConfig{Store: store, Owner: "pod-1", Lease: 30 * time.Second, Reconciler: p.reconciler()}})
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(reclaimActions))
	for i, act := range reclaimActions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				err := callErr(t, tr, p.URL, act)
				var e *Error
				if errors.Is(err, ErrPending) && errors.As(err, &e) && time.Since(start) < time.Minute {
					time.Sleep(time.Until(e.RetryAt))
					continue
				}
				errs[i] = err
				return
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	p.late.Wait() // count the late effects too

	p.mu.Lock()
	effects, calls := p.effects, p.calls
	p.mu.Unlock()
	dup := 0
	for i, act := range reclaimActions {
		if errs[i] != nil {
			t.Errorf("%s: %v", act.Key, errs[i])
		}
		if n := effects[act.IdempotencyKey()]; n != 1 {
			t.Errorf("%s: %d effects at the provider, want 1", act.Key, n)
			dup += max(n-1, 0)
		}
		if r := stateOf(t, store, act); r.State != ledger.StateCompleted {
			t.Errorf("%s: %s after the rerun, want completed", act.Key, r.State)
		}
	}
	t.Logf("rerun of %d actions after SIGKILL (received: %s, settle time %s): %s; provider calls %d, duplicate effects %d",
		len(reclaimActions), received, settle, took.Round(time.Millisecond), calls, dup)
	return took
}
