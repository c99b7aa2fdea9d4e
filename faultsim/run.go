package faultsim

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/limiter"
)

// Run is one schedule being run. A world's functions get it to read the
// schedule and to log to its trace.
type Run struct {
	t     *testing.T
	w     *World
	s     *Schedule
	start time.Time
	store ledger.Store // the shared store, without faults
	lag   func(r *Run, failover bool)
	prov  *simProvider
	lim   limiter.Limiter
	ids   atomic.Int64
	wg    sync.WaitGroup // the jobs and the racing workers started by hooks
	// side is the unbatched store of a batch takeover's racing delivery
	// (World.Batches); racers are those deliveries, waited for before the
	// end's checks.
	side   ledger.Store
	racers sync.WaitGroup

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
	batch      batchState     // the schedule's batch fault
	batched    bool           // a batch of two or more store calls was sent
	nbatches   int            // such batches so far
}

func newSimRun(t *testing.T, w *World, s *Schedule) *Run {
	r := &Run{t: t, w: w, s: s, start: time.Now(), fired: make([]bool, len(s.Faults)),
		marks: map[string]int{}, died: map[int]bool{}, raced: map[int]bool{}, procs: make([]*simProc, max(s.Procs, 1))}
	r.prov = &simProvider{r: r, honours: s.Honours, effects: map[int]int{}, arrivals: map[int]int{},
		inflight: map[int]int{}, byCall: map[int64]int{}, keys: map[string]bool{}}
	r.store, r.lag = w.Open(t, r)
	if s.Batch != nil && s.Batch.Kind == faultBatchTakeover && r.side == nil {
		t.Fatalf("%s: a world with Batches must give its Run an unbatched store (Run.SetUnbatched)", w.Name)
	}
	if s.Batch != nil {
		w.batchCounts.drawn[s.Batch.Kind-faultBatchLost].Add(1)
	}
	var limits []limiter.Limit
	if s.Limit > 0 {
		limits = []limiter.Limit{limiter.PerSecond(s.Limit)}
	}
	local, err := limiter.NewLocal(limiter.LocalConfig{Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	r.lim = simLimiter{r: r, inner: local, outage: true}
	if w.Limiter != nil && s.Limit > 0 {
		r.lim = simLimiter{r: r, inner: w.Limiter(t, r)}
	}
	return r
}

// T returns the schedule's test.
func (r *Run) T() *testing.T { return r.t }

// Schedule returns the schedule being run.
func (r *Run) Schedule() *Schedule { return r.s }

// World returns the world the schedule runs in.
func (r *Run) World() *World { return r.w }

// Start returns when the run started; a schedule's times count from it.
func (r *Run) Start() time.Time { return r.start }

// Go runs f on a goroutine of its own that the run waits for before it
// ends.
func (r *Run) Go(f func()) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		f()
	}()
}

// Logf adds a line to the run's trace, stamped with the run's time.
func (r *Run) Logf(format string, args ...any) {
	line := fmt.Sprintf("%8v ", time.Since(r.start).Round(time.Millisecond)) + fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.trace = append(r.trace, line)
	r.mu.Unlock()
}

// violate records a broken invariant.
func (r *Run) violate(invariant, format string, args ...any) {
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
	key, _, _ := strings.Cut(k.Key, "#redirect-") // a redirect hop's effect is its action's
	if strings.HasPrefix(key, "\x1f") {           // scoped (retrybudget.ScopedAction): "\x1f<len>:<scope>order-N"
		if n, rest, ok := strings.Cut(key[1:], ":"); ok {
			if l, err := strconv.Atoi(n); err == nil && l <= len(rest) {
				key = rest[l:]
			}
		}
	}
	n, err := strconv.Atoi(strings.TrimPrefix(key, "order-"))
	if err != nil {
		return -1
	}
	return n
}

func (r *Run) marked(k ledger.Key) {
	r.mu.Lock()
	r.marks[k.Key]++
	r.mu.Unlock()
}

// take returns the unfired fault of one of kinds at pt of the call in ctx,
// and fires it; nil when none matches.
func (r *Run) take(ctx context.Context, pt point, after bool, kinds ...faultKind) *fault {
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
func (r *Run) hook(ctx context.Context, pt point, after bool) bool {
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
		slot := -1
		if r.s.SharedOwner {
			slot = f.Action % len(r.procs)
		}
		r.call(f.Action, 0, r.newProc(slot))
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
func (r *Run) stalled(ctx context.Context, op func(context.Context) error) error {
	done := make(chan error, 1)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		time.Sleep(r.w.Lease * 3 / 2)
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
func (r *Run) reconciler(k recKind) ledger.Reconciler {
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
	case recVisible:
		// A provider without keys, looked up by the action (GitHub's
		// issues by title): what it has applied so far, so a request it
		// is still processing is "not found".
		return func(_ context.Context, rec ledger.Record) (ledger.Resolution, error) {
			a := actionOf(rec.Key)
			if applied, _ := r.prov.lookup(a); applied {
				return ledger.Resolution{State: ledger.StateCompleted, Outcome: ledger.Outcome{Status: 201,
					Body: []byte(fmt.Sprintf(`{"order":%d}`, a))}}, nil
			}
			return ledger.Resolution{State: ledger.StateFailed, Reason: "not found at the provider"}, nil
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
func (r *Run) report(rep ledger.SweepReport) {
	for _, rc := range rep.Reconciled {
		r.Logf("sweep: %s %s -> %s %v", rc.Key.Key, rc.Verdict, rc.Result(), rc.Err)
	}
}
