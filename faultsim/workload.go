package faultsim

// The simulated workload: worker processes, the job queue that drives
// each action, and the caller (an SDK, when the schedule says so) of one
// call.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/budget"
	"github.com/retrybudget/retrybudget/ledger"
)

// simProc is one worker process: a Transport over the shared store and
// provider. A dead process reaches neither again, and its calls end.
type simProc struct {
	r  *Run
	id int
	// slot is the process's slot; -1 for a process of its own.
	slot int
	tr   *retrybudget.Transport
	// owner is its LedgerConfig.Owner, and instance its run of that
	// owner (ledger.ReserveRequest.Instance), new with every process.
	owner, instance string

	// flooded reports that other callers of the process flooded its
	// give-up memory (once per process).
	flooded atomic.Bool
	// sideReserve, when set, sends the process's first Reserve to the
	// run's unbatched store (a batch takeover's racing delivery) and is
	// closed once it returned.
	sideReserve chan struct{}
	sideOnce    sync.Once

	mu     sync.Mutex // guards isDead and calls
	isDead bool
	calls  map[int64]context.CancelFunc
}

// newProc starts a worker process in slot (-1: a process of its own, a
// racing delivery's). Under StableOwners its Owner is the slot's, as a
// pod's name survives its restarts; the process is a new instance of it.
func (r *Run) newProc(slot int) *simProc {
	r.mu.Lock()
	r.nprocs++
	p := &simProc{r: r, id: r.nprocs, slot: slot, calls: map[int64]context.CancelFunc{}}
	r.mu.Unlock()
	s := r.s
	p.owner, p.instance = "proc-"+strconv.Itoa(p.id), ""
	if s.StableOwners && slot >= 0 {
		p.owner, p.instance = "worker-"+strconv.Itoa(slot), ledger.NewNonce()
	}
	cfg := retrybudget.Config{
		Base: procBase{p}, KeysHonoured: s.Honours, OmitKey: !s.Honours, Jitter: -1,
		Budget: budget.Unlimited{}, Limiter: r.lim, Routes: r.routes(), SettleTime: r.w.settleTime(),
		Ledger: retrybudget.LedgerConfig{Store: simStore{p}, Owner: p.owner,
			Lease: r.w.Lease, Reconciler: r.reconciler(s.Reconciler)},
	}
	if s.NoLedger {
		cfg.Ledger = retrybudget.LedgerConfig{}
	}
	p.tr = retrybudget.New(cfg)
	return p
}

// proc returns the live process of slot, starting one when it died.
func (r *Run) proc(slot int) *simProc {
	r.mu.Lock()
	p := r.procs[slot]
	r.mu.Unlock()
	if p != nil && !p.dead() {
		return p
	}
	p = r.newProc(slot)
	r.mu.Lock()
	r.procs[slot] = p
	r.mu.Unlock()
	return p
}

func (p *simProc) dead() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.isDead
}

// die kills the process: its calls' contexts end, and nothing it does
// reaches the store or the provider any more.
func (p *simProc) die() {
	p.mu.Lock()
	if p.isDead {
		p.mu.Unlock()
		return
	}
	p.isDead = true
	calls := p.calls
	p.calls = nil
	p.mu.Unlock()
	p.r.Logf("process %d dies", p.id)
	for _, cancel := range calls {
		cancel()
	}
}

// enter starts a call of p, numbered id, under ctx: the context it
// returns ends when p dies, and leave must be called once the call ends.
// ok is false when p is already dead; the call must then make nothing.
func (p *simProc) enter(ctx context.Context, id int64) (_ context.Context, leave func(), ok bool) {
	ctx, kill := context.WithCancel(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.isDead {
		kill()
		return ctx, func() {}, false
	}
	p.calls[id] = kill
	return ctx, func() {
		p.mu.Lock()
		delete(p.calls, id)
		p.mu.Unlock()
		kill()
	}, true
}

// maxRuns is how many times a job runs an action at most.
const maxRuns = 4

// run runs the schedule's jobs, one per action, and then checks the end
// state.
func (r *Run) run() {
	var mon *ledger.Monitoring
	if r.s.Monitor != recNone {
		mon = ledger.Monitor(context.Background(), ledger.MonitorConfig{Store: r.store, Every: r.w.Lease / 2,
			Reconciler: r.reconciler(r.s.Monitor), Owner: "monitor", Report: r.report})
	}
	var jobs sync.WaitGroup
	for _, l := range r.s.Lags {
		if r.lag == nil {
			break
		}
		jobs.Add(1)
		go func() {
			defer jobs.Done()
			time.Sleep(l.At)
			r.Logf("FAULT replica-lag, then failover %v", l.Failover)
			r.lag(r, l.Failover)
		}()
	}
	for a := range r.s.Actions {
		jobs.Add(1)
		go func() {
			defer jobs.Done()
			r.job(a)
		}()
	}
	jobs.Wait()
	r.racers.Wait()
	if mon != nil {
		mon.Stop()
	}
	r.checkEnd()
	r.wg.Wait()
}

// callResult is what the caller of one SDK call saw.
type callResult struct {
	ci   *callInfo
	out  retrybudget.Outcome
	ok   bool // a 2xx answer
	died bool // the caller's process died
	// step and next are what Next told the worker.
	step retrybudget.Step
	next retrybudget.Outcome
}

// call makes one call of action a (an SDK call, with its re-sends) in
// process p, and checks what its caller saw. run 0 is a racing delivery,
// on which no fault strikes.
func (r *Run) call(a, run int, p *simProc) callResult {
	ci := &callInfo{action: a, run: run, id: r.ids.Add(1), proc: p}
	ctx := context.WithValue(context.Background(), callInfoKey{}, ci)
	ctx = retrybudget.WithAction(ctx, simActionKey(a))
	ctx, captured := retrybudget.CaptureOutcome(ctx)
	var deadline time.Time
	if d := r.s.Actions[a].Deadline; d > 0 {
		deadline = time.Now().Add(d)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	ctx, leave, ok := p.enter(ctx, ci.id)
	defer leave()
	if !ok {
		return callResult{died: true}
	}
	res := callResult{ci: ci}
	for n := 0; ; n++ {
		req := r.request(ctx, a, n)
		sent := time.Now()
		resp, err := r.send(p, req)
		end := time.Now()
		if !r.s.SDK {
			res.step, res.next = r.advise(captured, resp, err)
		}
		status := 0
		if resp != nil {
			status = resp.StatusCode
			r.readFirst(a, resp)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if p.dead() {
			return callResult{died: true}
		}
		r.mu.Lock()
		late := end.Sub(deadline) - ci.hookTime
		r.mu.Unlock()
		if !deadline.IsZero() && late > r.w.Slack {
			// The process's own stalls while the call ran are the
			// machine's, not the library's (stallProbe).
			if stalled := r.w.stalls.during(sent, end); late > r.w.Slack+stalled {
				r.violate("deadline", "action %d run %d send %d: RoundTrip returned %v after its deadline (slack %v, the process stalled %v meanwhile)",
					a, run, n, late, r.w.Slack, stalled)
			} else {
				r.w.excused.Add(1)
				r.Logf("call: action %d run %d send %d: returned %v after its deadline, within the slack and the process's stall of %v",
					a, run, n, late, stalled)
			}
		}
		res.out, _ = captured.Last()
		res.ok = err == nil && status < 300
		r.checkDone(a, run, resp, err)
		o := res.out
		r.Logf("call: action %d run %d send %d (proc %d): status %d reason %v maybeApplied %v replayed %v repeated %v retryAt %v",
			a, run, n, p.id, status, o.Reason, o.MaybeApplied, o.Replayed, o.Repeated, relTime(r.start, o.RetryAt))
		if !r.s.SDK || n == 2 || !sdkRetries(status, err) {
			if r.s.SDK {
				res.step, res.next = r.advise(captured, resp, err)
			}
			break
		}
		if r.s.Flood > 0 && p.flooded.CompareAndSwap(false, true) {
			r.flood(p)
		}
		if err := sleepCtx(ctx, r.w.Lease/60); err != nil {
			res.step, res.next = r.advise(captured, nil, err)
			break
		}
	}
	r.checkCall(res)
	return res
}

// firstByteWait bounds how long a streamed response's first bytes may
// take to reach the caller after RoundTrip returned: the Transport reads
// ahead at most a second (settleWait) to store the answer.
const firstByteWait = time.Second

// readFirst reads the first byte of a streamed response and checks that it
// came as it arrived, not held until the stream ended.
func (r *Run) readFirst(a int, resp *http.Response) {
	if resp.Header.Get("X-Sim-Stream") == "" {
		return
	}
	start := time.Now()
	var b [1]byte
	n, err := resp.Body.Read(b[:])
	if took := time.Since(start); n == 0 || took > firstByteWait+r.w.Slack {
		r.violate("a streamed response is readable as it arrives",
			"action %d: first byte after %v (read %d, %v); the provider sent it at once", a, took, n, err)
	}
}

// request is the caller's request for action a, its SDK's send n.
func (r *Run) request(ctx context.Context, a, n int) *http.Request {
	body := fmt.Sprintf(`{"amount":100,"order":%d}`, a)
	if r.s.Twins {
		body = `{"amount":100}`
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+simHost+r.s.path(a), nil)
	if err != nil {
		panic(err)
	}
	req.Body, req.ContentLength = r.track(body), int64(len(body))
	if r.s.GetBody {
		req.GetBody = func() (io.ReadCloser, error) { return r.track(body), nil }
	}
	req.Header.Set("Content-Type", "application/json")
	if r.s.SDK {
		req.Header.Set("X-Stainless-Retry-Count", strconv.Itoa(n))
	}
	return req
}

// simHost is the provider's host, and so the limiter's boundary.
const simHost = "provider.sim"

// track returns a request body whose closing the run checks.
func (r *Run) track(body string) *trackedBody {
	tb := &trackedBody{Reader: strings.NewReader(body)}
	r.mu.Lock()
	r.bodies = append(r.bodies, tb)
	r.mu.Unlock()
	return tb
}

// sdkRetries reports whether openai-go re-sends after this answer.
func sdkRetries(status int, err error) bool {
	return err != nil || status == 408 || status == 409 || status == 429 || status >= 500
}

// flood has other callers of p make s.Flood failing calls, each given up
// and remembered for its own SDK's re-sends; it runs once per process,
// before the first SDK re-send there. The callers die with the process:
// their calls end, and no more are made. flood returns how many calls
// they made.
func (r *Run) flood(p *simProc) int {
	ctx, leave, ok := p.enter(context.Background(), r.ids.Add(1))
	defer leave()
	if !ok {
		return 0
	}
	n := 0
	for ; n < r.s.Flood && ctx.Err() == nil; n++ {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://flood.sim/flood", strings.NewReader("{}"))
		req.Header.Set("Idempotency-Key", fmt.Sprintf("flood-%d-%d", p.id, n))
		resp, err := r.send(p, req)
		if err == nil {
			resp.Body.Close()
		}
	}
	r.Logf("flood: %d give-ups by other callers of process %d", n, p.id)
	return n
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func relTime(start, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Sub(start).Round(time.Millisecond).String()
}
