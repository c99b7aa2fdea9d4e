package retrybudget_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/budget"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/limiter"
)

// TestSimulation runs many whole calls through real Transports against a
// fake provider and a real ledger store, under schedules drawn from seeds
// (see schedule for the fault set), and checks the library's promises
// after each (see simRun.checkCall and simRun.checkEnd):
//
//   - at most one effect per action at the provider;
//   - no applied action reported (Outcome.MaybeApplied false on a failed
//     call) or recorded (failed, or absent) as not applied;
//   - no action that was never sent nor marked as sending reported or
//     recorded as uncertain;
//   - every RoundTrip returns by its deadline plus the world's slack;
//   - no action in progress past its lease and one sweep that Sweep does
//     not list;
//   - the limiter never grants more than the limit in any window, nor
//     during a cooldown the provider asked for; an unavailable limiter is
//     reported as ErrLimiter, not as a rate limit, and a failing Allow
//     returns within its Timeout and half of it; ErrRateLimited carries a
//     RetryAt;
//   - every caller's request body is closed (the RoundTripper contract);
//   - a streamed answer's first bytes reach the caller within a second
//     (the Transport's read-ahead to store it), not when the stream ends.
//
// A failing schedule prints its seed, its schedule, the broken invariants
// and a trace; rerun it with -sim.seed=N (or RETRYBUDGET_SIM_SEED=N). A
// seed always draws the same schedule. The Memory store runs in virtual
// time (testing/synctest) and a racer runs on the owner's goroutine, so a
// seed mostly reruns the same interleaving too; goroutines woken at the
// same virtual instant run in the scheduler's order, and code that walks a
// map (a full give-up memory) in Go's random order. Redis runs in real
// time with a 300 ms lease, so its seeds rerun the faults, not the timing.
// The CI budget is 800 Memory and 32 Redis schedules (about 90 s with
// -race on two cores); -sim.schedules=N or RETRYBUDGET_LONG=1 (20,000 and
// 1,000) runs more.
func TestSimulation(t *testing.T) {
	for _, w := range simWorlds() {
		t.Run(w.name, func(t *testing.T) { runSimulation(t, w) })
	}
}

var (
	simSeedFlag      = flag.Int64("sim.seed", 0, "TestSimulation: run only the schedule of this seed")
	simSchedulesFlag = flag.Int("sim.schedules", 0, "TestSimulation: schedules per store (zero: the CI budget, or the long one with RETRYBUDGET_LONG=1)")
	simVerboseFlag   = flag.Bool("sim.trace", false, "TestSimulation: log each schedule's trace, not only a failing one's")
)

// simWorld is a store to simulate against, and the scale of its time.
type simWorld struct {
	name string
	// lease is the ledger lease; every duration of a schedule is a
	// fraction or multiple of it.
	lease time.Duration
	// slack is how long past its deadline a RoundTrip may return: two
	// store calls' grace (storeGrace, 50 ms, for recording a send and
	// settling) in virtual time, more with real sockets.
	slack time.Duration
	// virtual runs each schedule in a testing/synctest bubble.
	virtual bool
	// replicas: the store can draw WaitReplicas and replica lag.
	replicas bool
	// inbound: the world draws inbound middleware schedules too.
	inbound bool
	// ci and long are the schedules per run in CI and in long mode.
	ci, long int
	// parallel > 1 runs schedules as parallel subtests.
	parallel int
	// setup, when set, starts what the world's schedules share, for the
	// world's test.
	setup func(t *testing.T)
	// limiter, when set, is the shared limiter of a schedule with a rate
	// limit, whose outage is its own (simLimiter injects none); nil means
	// a limiter.Local whose outage simLimiter injects.
	limiter func(t *testing.T, r *simRun) limiter.Limiter
	// open starts the store for one schedule, closed with t's cleanup;
	// lag starts replica lag (nil when the world has no replicas).
	open func(t *testing.T, r *simRun) (ledger.Store, func(r *simRun, failover bool))
}

// runSimulation runs w's seed budget, or the one seed asked for, each
// schedule as a subtest named after its seed.
func runSimulation(t *testing.T, w *simWorld) {
	seeds := simSeeds(t, w)
	if w.setup != nil {
		w.setup(t)
	}
	start := time.Now()
	var failed atomic.Int64
	t.Run("schedules", func(t *testing.T) {
		for _, seed := range seeds {
			t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
				if w.parallel > 1 {
					t.Parallel()
				}
				if v := runSchedule(t, w, seed); v != "" {
					failed.Add(1)
					t.Error(v)
				}
			})
		}
	})
	d := time.Since(start)
	t.Logf("%s: %d schedules in %v (%.1f/s), %d broke an invariant; rerun one with -run 'TestSimulation/%s/schedules/seed=N$'",
		w.name, len(seeds), d.Round(time.Millisecond), float64(len(seeds))/d.Seconds(), failed.Load(), w.name)
}

// simSeeds returns the seeds to run: the one asked for, or 1..N.
func simSeeds(t *testing.T, w *simWorld) []int64 {
	seed := *simSeedFlag
	if v := os.Getenv("RETRYBUDGET_SIM_SEED"); seed == 0 && v != "" {
		var err error
		if seed, err = strconv.ParseInt(v, 10, 64); err != nil {
			t.Fatalf("RETRYBUDGET_SIM_SEED=%q: %v", v, err)
		}
	}
	if seed != 0 {
		return []int64{seed}
	}
	n := w.ci
	if os.Getenv("RETRYBUDGET_LONG") == "1" {
		n = w.long
	}
	if *simSchedulesFlag > 0 {
		n = *simSchedulesFlag
	}
	seeds := make([]int64, n)
	for i := range seeds {
		seeds[i] = int64(i + 1)
	}
	return seeds
}

// runSchedule runs seed's schedule in w and returns the report of its
// violations, empty when it kept every invariant.
func runSchedule(t *testing.T, w *simWorld, seed int64) string {
	s := drawSchedule(seed, w)
	var r *simRun
	body := func(t *testing.T) {
		r = newSimRun(t, w, s)
		if s.Inbound != nil {
			r.runInbound()
		} else {
			r.run()
		}
	}
	if w.virtual {
		simBubble(t, body)
	} else {
		body(t)
	}
	if len(r.violations) == 0 {
		if *simVerboseFlag {
			t.Logf("%s\n%s", s, strings.Join(r.trace, "\n"))
		}
		return ""
	}
	return fmt.Sprintf("%s: INVARIANT BROKEN, seed %d (rerun: -run 'TestSimulation/%s' -sim.seed=%d)\n%s  broken:\n    %s\n  trace:\n    %s",
		w.name, seed, w.name, seed, s, strings.Join(r.violations, "\n    "), strings.Join(r.trace, "\n    "))
}

// simRun is one schedule being run.
type simRun struct {
	t     *testing.T
	w     *simWorld
	s     *schedule
	start time.Time
	store ledger.Store // the shared store, without faults
	lag   func(r *simRun, failover bool)
	prov  *simProvider
	lim   limiter.Limiter
	ids   atomic.Int64
	wg    sync.WaitGroup // the jobs and the racing workers started by hooks

	mu         sync.Mutex // guards all below
	procs      []*simProc // the current process of each slot
	nprocs     int
	fired      []bool         // per fault of s.Faults
	marks      map[string]int // MarkSending writes that happened, per action key
	grants     []time.Time    // the limiter's grants
	bodies     []*trackedBody // every caller's request body
	violations []string       // broken invariants
	trace      []string       // what happened, for the report
	died       map[int]bool   // actions one of whose calls died with its process
	raced      map[int]bool   // actions delivered twice at once (faultRaceWorker)
}

func newSimRun(t *testing.T, w *simWorld, s *schedule) *simRun {
	r := &simRun{t: t, w: w, s: s, start: time.Now(), fired: make([]bool, len(s.Faults)),
		marks: map[string]int{}, died: map[int]bool{}, raced: map[int]bool{}, procs: make([]*simProc, max(s.Procs, 1))}
	r.prov = &simProvider{r: r, honours: s.Honours, effects: map[int]int{}, arrivals: map[int]int{},
		inflight: map[int]int{}, byCall: map[int64]int{}, keys: map[string]bool{}}
	r.store, r.lag = w.open(t, r)
	var limits []limiter.Limit
	if s.Limit > 0 {
		limits = []limiter.Limit{limiter.PerSecond(s.Limit)}
	}
	local, err := limiter.NewLocal(limiter.LocalConfig{Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	r.lim = simLimiter{r: r, inner: local, outage: true}
	if w.limiter != nil && s.Limit > 0 {
		r.lim = simLimiter{r: r, inner: w.limiter(t, r)}
	}
	return r
}

// logf adds a line to the run's trace, stamped with the run's time.
func (r *simRun) logf(format string, args ...any) {
	line := fmt.Sprintf("%8v ", time.Since(r.start).Round(time.Millisecond)) + fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.trace = append(r.trace, line)
	r.mu.Unlock()
}

// violate records a broken invariant.
func (r *simRun) violate(invariant, format string, args ...any) {
	r.mu.Lock()
	r.violations = append(r.violations, invariant+": "+fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

// simAction returns the ledger action of action a.
func simActionKey(a int) retrybudget.Action {
	return retrybudget.Action{Tenant: "acme", Operation: "charge", Key: "order-" + strconv.Itoa(a)}
}

// actionOf returns the action index of a ledger key, -1 if none.
func actionOf(k ledger.Key) int {
	n, err := strconv.Atoi(strings.TrimPrefix(k.Key, "order-"))
	if err != nil {
		return -1
	}
	return n
}

func (r *simRun) marked(k ledger.Key) {
	r.mu.Lock()
	r.marks[k.Key]++
	r.mu.Unlock()
}

// take returns the unfired fault of one of kinds at pt of the call in ctx,
// and fires it; nil when none matches.
func (r *simRun) take(ctx context.Context, pt point, after bool, kinds ...faultKind) *fault {
	ci := callOf(ctx)
	if ci == nil || ci.run <= 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.s.Faults {
		f := &r.s.Faults[i]
		if r.fired[i] || f.Action != ci.action || f.Run != ci.run || f.Point != pt || f.After != after {
			continue
		}
		for _, k := range kinds {
			if f.Kind == k {
				r.fired[i] = true
				r.trace = append(r.trace, fmt.Sprintf("%8v FAULT %s", time.Since(r.start).Round(time.Millisecond), f))
				return f
			}
		}
	}
	return nil
}

// hook applies the faults that strike at pt of the call in ctx (a death,
// a racing worker or sweep, replica lag) and reports whether the call's
// process died there.
func (r *simRun) hook(ctx context.Context, pt point, after bool) bool {
	f := r.take(ctx, pt, after, faultDie, faultRaceWorker, faultRaceSweep, faultLag)
	if f == nil {
		return false
	}
	if ci := callOf(ctx); f.Kind == faultRaceWorker || f.Kind == faultRaceSweep {
		// The racer runs on the owner's goroutine, so that a seed fixes
		// the interleaving; its time is the simulator's, not the call's.
		start := time.Now()
		defer func() {
			r.mu.Lock()
			ci.hookTime += time.Since(start)
			r.mu.Unlock()
		}()
	}
	switch f.Kind {
	case faultDie:
		callOf(ctx).proc.die()
		return true
	case faultRaceWorker:
		r.mu.Lock()
		r.raced[f.Action] = true
		r.mu.Unlock()
		r.call(f.Action, 0, r.newProc())
	case faultRaceSweep:
		rec := r.s.Monitor
		if rec == recNone {
			rec = recExact
		}
		r.report(ledger.SweepOnce(context.Background(), ledger.MonitorConfig{Store: r.store, Reconciler: r.reconciler(rec), Owner: "sweeper"}))
	case faultLag:
		if r.lag != nil {
			r.lag(r, f.Failover)
		}
	}
	return false
}

// stalled runs op a lease and a half late, as a frozen store runs a
// command once it wakes, and returns when op does or ctx ends.
func (r *simRun) stalled(ctx context.Context, op func(context.Context) error) error {
	done := make(chan error, 1)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		time.Sleep(r.w.lease * 3 / 2)
		done <- op(context.WithoutCancel(ctx))
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// reconciler returns a Reconciler that behaves as k.
func (r *simRun) reconciler(k recKind) ledger.Reconciler {
	switch k {
	case recExact:
		return func(_ context.Context, rec ledger.Record) (ledger.Resolution, error) {
			a := actionOf(rec.Key)
			applied, known := r.prov.lookup(a)
			switch {
			case !known:
				return ledger.Resolution{State: ledger.StateUncertain, Reason: "in flight"}, nil
			case applied:
				return ledger.Resolution{State: ledger.StateCompleted, Outcome: ledger.Outcome{Status: 201,
					Body: []byte(fmt.Sprintf(`{"order":%d}`, a))}}, nil
			}
			return ledger.Resolution{State: ledger.StateFailed, Reason: "not at the provider"}, nil
		}
	case recUnknown:
		return func(context.Context, ledger.Record) (ledger.Resolution, error) {
			return ledger.Resolution{State: ledger.StateUncertain, Reason: "cannot tell"}, nil
		}
	case recFailing:
		return func(context.Context, ledger.Record) (ledger.Resolution, error) {
			return ledger.Resolution{}, errors.New("lookup failed")
		}
	}
	return nil
}

// report logs a sweep.
func (r *simRun) report(rep ledger.SweepReport) {
	for _, rc := range rep.Reconciled {
		r.logf("sweep: %s %s -> %s %v", rc.Key.Key, rc.Verdict, rc.Result(), rc.Err)
	}
}

// simProc is one worker process: a Transport over the shared store and
// provider. A dead process reaches neither again, and its calls end.
type simProc struct {
	r  *simRun
	id int
	tr *retrybudget.Transport

	// flooded reports that other callers of the process flooded its
	// give-up memory (once per process).
	flooded atomic.Bool

	mu     sync.Mutex // guards isDead and calls
	isDead bool
	calls  map[int64]context.CancelFunc
}

// newProc starts a worker process.
func (r *simRun) newProc() *simProc {
	r.mu.Lock()
	r.nprocs++
	p := &simProc{r: r, id: r.nprocs, calls: map[int64]context.CancelFunc{}}
	r.mu.Unlock()
	s := r.s
	cfg := retrybudget.Config{
		Base: procBase{p}, KeysHonoured: s.Honours, OmitKey: !s.Honours, Jitter: -1,
		Budget: budget.Unlimited{}, Limiter: r.lim,
		Ledger: retrybudget.LedgerConfig{Store: simStore{p}, Owner: "proc-" + strconv.Itoa(p.id),
			Lease: r.w.lease, Reconciler: r.reconciler(s.Reconciler)},
	}
	if s.NoLedger {
		cfg.Ledger = retrybudget.LedgerConfig{}
	}
	p.tr = retrybudget.New(cfg)
	return p
}

// proc returns the live process of slot, starting one when it died.
func (r *simRun) proc(slot int) *simProc {
	r.mu.Lock()
	p := r.procs[slot]
	r.mu.Unlock()
	if p != nil && !p.dead() {
		return p
	}
	p = r.newProc()
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
	p.r.logf("process %d dies", p.id)
	for _, cancel := range calls {
		cancel()
	}
}

func (p *simProc) enter(id int64, cancel context.CancelFunc) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.isDead {
		return false
	}
	p.calls[id] = cancel
	return true
}

func (p *simProc) leave(id int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.calls, id)
}

// maxRuns is how many times a job runs an action at most.
const maxRuns = 4

// run runs the schedule's jobs, one per action, and then checks the end
// state.
func (r *simRun) run() {
	var mon *ledger.Monitoring
	if r.s.Monitor != recNone {
		mon = ledger.Monitor(context.Background(), ledger.MonitorConfig{Store: r.store, Every: r.w.lease / 2,
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
			r.logf("FAULT replica-lag, then failover %v", l.Failover)
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
	if mon != nil {
		mon.Stop()
	}
	r.checkEnd()
	r.wg.Wait()
}

// job is the caller of action a: a job queue that runs it until it
// succeeds, follows the library's advice on a failure (come back at
// RetryAt; an uncertain outcome is an operator's), and delivers it again
// after a lease when its worker died.
func (r *simRun) job(a int) {
	time.Sleep(r.s.Actions[a].Start)
	r.deliver(a)
	if r.s.Actions[a].Again {
		time.Sleep(r.s.Redelivery)
		r.mu.Lock()
		r.raced[a] = true // a duplicate: the provider's key or the ledger must absorb it
		r.mu.Unlock()
		r.logf("queue: action %d delivered again", a)
		r.call(a, maxRuns+1, r.proc(a%len(r.procs)))
	}
}

// deliver runs one delivery of action a's job to its end.
func (r *simRun) deliver(a int) {
	L := r.w.lease
	for run := 1; run <= maxRuns; run++ {
		res := r.call(a, run, r.proc((a+run-1)%len(r.procs)))
		if res.died {
			r.mu.Lock()
			r.died[a] = true
			r.mu.Unlock()
			time.Sleep(r.s.Redelivery) // the queue's visibility timeout
			continue
		}
		o := res.out
		switch {
		case res.ok || o.Replayed:
			return
		case errors.Is(o.Reason, retrybudget.ErrUncertain), errors.Is(o.Reason, retrybudget.ErrConflict),
			errors.Is(o.Reason, retrybudget.ErrRejected), o.MaybeApplied && !r.s.Honours:
			return // for an operator
		case !o.RetryAt.IsZero():
			time.Sleep(min(max(time.Until(o.RetryAt), 0)+time.Millisecond, 3*L))
		default:
			time.Sleep(L / 3)
		}
	}
}

// callResult is what the caller of one SDK call saw.
type callResult struct {
	ci   *callInfo
	out  retrybudget.Outcome
	ok   bool // a 2xx answer
	died bool // the caller's process died
}

// call makes one call of action a (an SDK call, with its re-sends) in
// process p, and checks what its caller saw. run 0 is a racing delivery,
// on which no fault strikes.
func (r *simRun) call(a, run int, p *simProc) callResult {
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
	ctx, kill := context.WithCancel(ctx)
	defer kill()
	if !p.enter(ci.id, kill) {
		return callResult{died: true}
	}
	defer p.leave(ci.id)
	res := callResult{ci: ci}
	for n := 0; ; n++ {
		req := r.request(ctx, a, n)
		resp, err := p.tr.RoundTrip(req)
		end := time.Now()
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
		if !deadline.IsZero() && late > r.w.slack {
			r.violate("deadline", "action %d run %d send %d: RoundTrip returned %v after its deadline (slack %v)",
				a, run, n, late, r.w.slack)
		}
		res.out, _ = captured.Last()
		res.ok = err == nil && status < 300
		o := res.out
		r.logf("call: action %d run %d send %d (proc %d): status %d reason %v maybeApplied %v replayed %v repeated %v retryAt %v",
			a, run, n, p.id, status, o.Reason, o.MaybeApplied, o.Replayed, o.Repeated, relTime(r.start, o.RetryAt))
		if !r.s.SDK || n == 2 || !sdkRetries(status, err) {
			break
		}
		if r.s.Flood > 0 && p.flooded.CompareAndSwap(false, true) {
			r.flood(p)
		}
		if sleepCtx(ctx, r.w.lease/60) != nil {
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
func (r *simRun) readFirst(a int, resp *http.Response) {
	if resp.Header.Get("X-Sim-Stream") == "" {
		return
	}
	start := time.Now()
	var b [1]byte
	n, err := resp.Body.Read(b[:])
	if took := time.Since(start); n == 0 || took > firstByteWait+r.w.slack {
		r.violate("a streamed response is readable as it arrives",
			"action %d: first byte after %v (read %d, %v); the provider sent it at once", a, took, n, err)
	}
}

// request is the caller's request for action a, its SDK's send n.
func (r *simRun) request(ctx context.Context, a, n int) *http.Request {
	body := fmt.Sprintf(`{"amount":100,"order":%d}`, a)
	if r.s.Twins {
		body = `{"amount":100}`
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+simHost+"/v1/charges", nil)
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
func (r *simRun) track(body string) *trackedBody {
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
// before the first SDK re-send there.
func (r *simRun) flood(p *simProc) {
	for i := range r.s.Flood {
		req, _ := http.NewRequest(http.MethodPost, "http://flood.sim/flood", strings.NewReader("{}"))
		req.Header.Set("Idempotency-Key", fmt.Sprintf("flood-%d-%d", p.id, i))
		resp, err := p.tr.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
	}
	r.logf("flood: %d give-ups by other callers of process %d", r.s.Flood, p.id)
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
