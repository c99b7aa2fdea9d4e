package faultsim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/retrybudget/retrybudget/idempotency"
	"github.com/retrybudget/retrybudget/ledger"
)

// inboundSchedule is a workload of the inbound middleware: clients send
// actions to a guarded handler that does one effect per run, and retry
// (on 5xx and on 409 with Retry-After), once even while the handler runs.
type inboundSchedule struct {
	// Atomic runs the middleware with Config.Atomic over a store with
	// transactions.
	Atomic bool
	Keys   []inboundKey
	// NewOwner restarts a dead server under an Owner of its own; else
	// under the same one (a pod's name).
	NewOwner bool
}

// inboundKey is one action of the inbound workload and its handler's
// behaviour.
type inboundKey struct {
	// InTx does the effect inside the action's transaction (Atomic only);
	// otherwise the handler calls MarkEffect and then does it.
	InTx bool
	// Statuses are the handler's answers to its runs, in order; past the
	// list it answers 201.
	Statuses []int
	// RetryMid has the client retry while the handler's first run is
	// between its effect and its answer.
	RetryMid bool
	// CommitCut cuts the connection of the first run's COMMIT (Atomic in
	// a world with World.Tx only); zero means no cut.
	CommitCut Cut
	// Crash is where the first run's server dies, or what becomes of its
	// MarkEffect write; zero means neither.
	Crash crashPoint
}

// TxWorld is a world's own transactions, for the inbound workload's Atomic
// schedules: the handler's effect is a write inside the action's
// transaction, counted where it committed.
type TxWorld struct {
	// Store is the middleware's ledger; it implements ledger.Atomic.
	Store ledger.Store
	// Effect does inbound key i's effect inside the transaction ctx
	// carries, and reports false when ctx carries none.
	Effect func(ctx context.Context, i int) (bool, error)
	// Effects counts inbound key i's effects that committed.
	Effects func(i int) int
	// CutCommit arms a cut of the next COMMIT the store sends (CutBefore
	// or CutAfter); zero disarms it.
	CutCommit func(c Cut)
}

func drawInbound(rng *rand.Rand, w *World) *inboundSchedule {
	in := &inboundSchedule{Atomic: rng.IntN(2) == 0}
	for range 1 + rng.IntN(3) {
		k := inboundKey{InTx: in.Atomic && rng.IntN(2) == 0, RetryMid: rng.IntN(2) == 0}
		for range 2 {
			k.Statuses = append(k.Statuses, []int{201, 201, 503, 500, 429}[rng.IntN(5)])
		}
		if w.Tx != nil && in.Atomic && rng.IntN(2) == 0 {
			k.CommitCut = []Cut{CutBefore, CutAfter}[rng.IntN(2)]
		}
		in.Keys = append(in.Keys, k)
	}
	return in
}

func (in *inboundSchedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "  inbound middleware, Atomic %v\n", in.Atomic)
	for i, k := range in.Keys {
		fmt.Fprintf(&b, "  key %d: effect in the transaction %v, answers %v, client retries mid-handler %v",
			i, k.InTx, k.Statuses, k.RetryMid)
		if k.CommitCut != 0 {
			fmt.Fprintf(&b, ", first run's COMMIT cut %s", k.CommitCut)
		}
		if k.Crash != crashNone {
			fmt.Fprintf(&b, ", first run: %s (restart under a new Owner %v)", k.Crash, in.NewOwner)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// runInbound runs the inbound workload and checks that each action's
// effect happened at most once and is never recorded as not applied.
func (r *Run) runInbound() {
	in := r.s.Inbound
	var store ledger.Store = r.store
	var tw *TxWorld
	switch {
	case in.Atomic && r.w.Tx != nil:
		tw = r.w.Tx(r.t, r)
		store = tw.Store
	case in.Atomic:
		store = &txStore{Store: r.store}
	}
	var mu sync.Mutex // guards effects, runs, marked, srv and guard
	effects, runs := map[int]int{}, map[int]int{}
	marked := map[int]bool{} // keys whose effect a run marked and then died or lost
	srv, nsrv := &server{id: 1}, 1
	var guard http.Handler
	handler := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		i, _ := strconv.Atoi(req.Header.Get("X-Sim-Key"))
		mu.Lock()
		run := runs[i]
		runs[i]++
		me, again := srv, marked[i]
		mu.Unlock()
		k := in.Keys[i]
		crash := crashNone
		if run == 0 {
			crash = k.Crash
		}
		if again {
			r.violate("a marked effect is not run again",
				"inbound key %d: run %d reached the handler after a run marked its effect and died", i, run)
		}
		die := func(at crashPoint) bool {
			if crash != at {
				return false
			}
			r.Logf("FAULT key %d run %d: server %d %s", i, run, me.id, at)
			me.dead.Store(true)
			return true
		}
		status := 201
		if run < len(k.Statuses) {
			status = k.Statuses[run]
		}
		apply := func() {
			mu.Lock()
			effects[i]++
			mu.Unlock()
		}
		inTx := false
		if die(crashBeforeMark) {
			return
		}
		if tw != nil && k.InTx {
			var err error
			if inTx, err = tw.Effect(req.Context(), i); err != nil {
				r.Logf("handler: key %d run %d: effect failed: %v", i, run, err)
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
		} else if tx, ok := req.Context().Value(txKey{}).(*memTx); ok && k.InTx {
			tx.effects = append(tx.effects, apply)
			inTx = true
		}
		if !inTx {
			err := idempotency.MarkEffect(context.WithValue(req.Context(), markFaultKey{}, crash))
			if err != nil {
				r.Logf("handler: key %d run %d: mark failed, no effect: %v", i, run, err)
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			if die(crashAfterMark) {
				mu.Lock()
				marked[i] = true
				mu.Unlock()
				return
			}
			apply()
		}
		if die(crashAfterEffect) {
			mu.Lock()
			marked[i] = marked[i] || !inTx
			mu.Unlock()
			return
		}
		r.Logf("handler: key %d run %d: effect done, answers %d", i, run, status)
		if run == 0 && k.RetryMid {
			rec := httptest.NewRecorder()
			mu.Lock()
			g := guard
			mu.Unlock()
			g.ServeHTTP(rec, inboundRequest(i))
			r.Logf("client: key %d retried mid-handler: %d %s", i, rec.Code, rec.Header().Get("Content-Type"))
		}
		if run == 0 && k.CommitCut != 0 && status < 300 { // a failed answer rolls back: no COMMIT
			r.Logf("FAULT key %d run 0: COMMIT cut %s", i, k.CommitCut)
			tw.CutCommit(k.CommitCut)
		}
		w.WriteHeader(status)
	})
	// start starts server process n: the middleware over the store as
	// that process reaches it.
	start := func(n int) (*server, http.Handler) {
		s := &server{id: n}
		var st ledger.Store = &serverStore{Store: store, srv: s}
		if _, ok := store.(ledger.Atomic); ok {
			st = serverAtomicStore{st.(*serverStore)}
		}
		owner := "server"
		if in.NewOwner {
			owner += "-" + strconv.Itoa(n)
		}
		return s, idempotency.New(idempotency.Config{Store: st, Tenant: func(*http.Request) string { return "acme" },
			Atomic: in.Atomic, Lease: r.w.Lease, Owner: owner})(handler)
	}
	srv, guard = start(nsrv)
	for i := range in.Keys {
		// The client retries until it gets an answer, for at least three
		// leases: past the lease of a run whose server died.
		until := time.Now().Add(3 * r.w.Lease)
		for try := 0; try < 4 || time.Now().Before(until); try++ {
			mu.Lock()
			if srv.dead.Load() { // the process manager restarts the server
				nsrv++
				srv, guard = start(nsrv)
				r.Logf("server %d starts", nsrv)
			}
			me, g := srv, guard
			mu.Unlock()
			rec := httptest.NewRecorder()
			g.ServeHTTP(rec, inboundRequest(i))
			if tw != nil {
				tw.CutCommit(0) // a run that committed nothing leaves the cut to no other
			}
			if me.dead.Load() { // the client's connection broke: it retries
				r.Logf("client: key %d try %d: connection reset (server %d died)", i, try, me.id)
				time.Sleep(r.w.Lease / 2)
				continue
			}
			r.Logf("client: key %d try %d: %d retry-after %q", i, try, rec.Code, rec.Header().Get("Retry-After"))
			retry := rec.Code >= 500 || (rec.Code == http.StatusConflict || rec.Code == http.StatusTooManyRequests) && rec.Header().Get("Retry-After") != ""
			if !retry {
				break
			}
			ra, _ := strconv.Atoi(rec.Header().Get("Retry-After"))
			time.Sleep(time.Duration(max(ra, 1)) * time.Second)
		}
	}
	time.Sleep(2 * r.w.Lease)
	for i, k := range in.Keys {
		mu.Lock()
		n, inTx := effects[i], 0
		mu.Unlock()
		if tw != nil {
			inTx = tw.Effects(i)
			n += inTx
		} else if k.InTx {
			inTx = n
		}
		if n > 1 {
			r.violate("at most one effect per action", "inbound key %d: the handler's effect happened %d times", i, n)
		}
		recd, err := r.store.Get(context.Background(), inboundAction(i))
		if err != nil {
			if n > 0 {
				r.violate("applied action recorded as not applied", "inbound key %d: applied, no record: %v", i, err)
			}
			continue
		}
		r.Logf("end: key %d: %s, %d effects", i, recd.State, n)
		if n > 0 && recd.State == ledger.StateFailed {
			r.violate("applied action recorded as not applied", "inbound key %d: applied, recorded failed (no effect): %q", i, recd.Reason)
		}
		if in.Atomic && k.InTx && (inTx > 0) != (recd.State == ledger.StateCompleted) {
			r.violate("a transaction is all or nothing",
				"inbound key %d: %d effects committed inside the action's transaction, the record is %s", i, inTx, recd.State)
		}
	}
	r.wg.Wait()
}

func inboundRequest(i int) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "http://api.sim/v1/activations", strings.NewReader(fmt.Sprintf(`{"n":%d}`, i)))
	req.Header.Set("Idempotency-Key", "key-"+strconv.Itoa(i))
	req.Header.Set("X-Sim-Key", strconv.Itoa(i))
	return req
}

// inboundAction is the ledger key the middleware uses for key i: tenant
// "acme", the route's operation, the client's key.
func inboundAction(i int) ledger.Key {
	return ledger.Key{Tenant: "acme", Operation: "POST /v1/activations", Key: "key-" + strconv.Itoa(i)}
}

// txStore gives a store transactions in memory, as ledger.Atomic asks: the
// effects a handler does through the transaction apply when it commits
// (completes the record), and none when it rolls back.
type txStore struct{ ledger.Store }

type txKey struct{}

func (s *txStore) BeginAtomic(ctx context.Context, k ledger.Key, token int64) (ledger.AtomicTx, error) {
	return &memTx{s: s.Store, k: k, token: token}, nil
}

type memTx struct {
	s       ledger.Store
	k       ledger.Key
	token   int64
	effects []func()
}

func (tx *memTx) Context(ctx context.Context) context.Context {
	return context.WithValue(ctx, txKey{}, tx)
}

func (tx *memTx) Complete(ctx context.Context, o ledger.Outcome) error {
	if err := tx.s.Complete(ctx, tx.k, tx.token, o); err != nil {
		return err
	}
	for _, f := range tx.effects {
		f()
	}
	return nil
}

func (tx *memTx) Rollback(context.Context) error {
	tx.effects = nil
	return nil
}

// MarkEffect has nothing to write: the store under txStore has no atomic
// mark, so a record whose lease ran out is uncertain, never failed.
func (tx *memTx) MarkEffect(context.Context) error { return nil }
