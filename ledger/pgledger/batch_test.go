package pgledger_test

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger/pgtest"
)

// holdTracer is a pgx tracer that counts the round trips of the store's
// statements (a batch each, the lone one too; an UPDATE run outside the
// batches) and, once armed, holds the first batch until release is
// closed, so that the statements made meanwhile queue for the next one.
// When that batch is back it calls afterHeld, if set.
type holdTracer struct {
	trips     atomic.Int64
	armed     atomic.Bool
	held      chan struct{}
	release   chan struct{}
	once      sync.Once
	afterHeld func()
}

type heldKey struct{}

func newHoldTracer() *holdTracer {
	return &holdTracer{held: make(chan struct{}), release: make(chan struct{})}
}

func (h *holdTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.HasPrefix(d.SQL, "UPDATE") {
		h.trips.Add(1) // not the harness's own statements
	}
	return ctx
}

func (h *holdTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (h *holdTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	h.trips.Add(1)
	if !h.armed.Load() {
		return ctx
	}
	first := false
	h.once.Do(func() { first = true })
	if !first {
		return ctx
	}
	close(h.held)
	<-h.release
	return context.WithValue(ctx, heldKey{}, true)
}

func (h *holdTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (h *holdTracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	if ctx.Value(heldKey{}) != nil && h.afterHeld != nil {
		h.afterHeld()
	}
}

// pgBatchRig is a Store whose pool is traced by a holdTracer, with n
// actions reserved.
type pgBatchRig struct {
	s      *pgledger.Store
	pool   *pgxpool.Pool
	tracer *holdTracer
	keys   []ledger.Key
	tokens []int64
}

// newPGBatchRig connects to the database at url in a fresh schema, through
// addr when it is set (a CutProxy's).
func newPGBatchRig(t *testing.T, url, addr string, n int) *pgBatchRig {
	t.Helper()
	schema := pgtest.Schema(t, url)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	if addr != "" {
		host, port, _ := net.SplitHostPort(addr)
		p, _ := strconv.Atoi(port)
		cfg.ConnConfig.Host, cfg.ConnConfig.Port = host, uint16(p)
		cfg.ConnConfig.TLSConfig, cfg.ConnConfig.Fallbacks = nil, nil
	}
	r := &pgBatchRig{tracer: newHoldTracer()}
	cfg.ConnConfig.Tracer = r.tracer
	if r.pool, err = pgxpool.NewWithConfig(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.pool.Close)
	r.s = newStore(t, r.pool, pgledger.Config{})
	for i := range n {
		k := ledger.Key{Tenant: "t", Operation: "charge", Key: "batch-" + strconv.Itoa(i)}
		res, err := r.s.Reserve(t.Context(), ledger.ReserveRequest{Key: k, Fingerprint: "f", Owner: "w1", MarksSending: true})
		if err != nil || res.Token == 0 {
			t.Fatalf("Reserve: %v, %+v", err, res)
		}
		r.keys, r.tokens = append(r.keys, k), append(r.tokens, res.Token)
	}
	return r
}

// together runs call(0) and, while its statement is held, call(1) to
// call(n-1), which queue for the next batch; then releases the hold and
// returns every call's error and the round trips they made.
func (r *pgBatchRig) together(t *testing.T, call func(i int) error) ([]error, int64) {
	t.Helper()
	n := len(r.keys)
	errs := make([]error, n)
	before := r.tracer.trips.Load()
	r.tracer.armed.Store(true)
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = call(0) })
	<-r.tracer.held
	for i := 1; i < n; i++ {
		wg.Go(func() { errs[i] = call(i) })
	}
	for end := time.Now().Add(time.Minute); pgledger.BatchWaiting(r.s) < n-1; runtime.Gosched() {
		if time.Now().After(end) {
			t.Fatalf("%d statements queued; want %d", pgledger.BatchWaiting(r.s), n-1)
		}
	}
	close(r.tracer.release)
	wg.Wait()
	return errs, r.tracer.trips.Load() - before
}

func TestBatchSharesRoundTrips(t *testing.T) {
	const n = 8
	r := newPGBatchRig(t, pgtest.URL(t), "", n)
	errs, trips := r.together(t, func(i int) error {
		return r.s.MarkSending(t.Context(), r.keys[i], r.tokens[i])
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("MarkSending %d: %v", i, err)
		}
	}
	// The first statement's own round trip, then one batch for the rest.
	if trips != 2 {
		t.Fatalf("%d statements made %d round trips; want 2", n, trips)
	}
	if calls, batches := pgledger.SharedStatements(r.s); calls != n-1 || batches != 1 {
		t.Fatalf("shared: %d statements in %d batches; want %d in 1", calls, batches, n-1)
	}
	for _, k := range r.keys {
		rec, err := r.s.Get(t.Context(), k)
		if err != nil || !rec.Sending {
			t.Fatalf("%s: %v, sending %v; want marked", k.Key, err, rec.Sending)
		}
	}
}

// TestBatchCallFailsAlone pins that one call of a batch that fails, the
// others written: a call fenced out (the server refuses it, and rolls the
// batch back), and one whose argument pgx cannot encode (a status outside
// int4: the batch fails before any of it is sent). That call gets its own
// error; every other call of the batch is written.
func TestBatchCallFailsAlone(t *testing.T) {
	const n, odd = 6, 3
	for _, tc := range []struct {
		name    string
		token   func(int64) int64
		status  int
		wantErr func(error) bool
	}{
		{"fenced out", func(tok int64) int64 { return tok + 1 }, 201, // as after another owner's takeover
			func(err error) bool { return errors.Is(err, ledger.ErrNotOwner) }},
		{"unencodable", func(tok int64) int64 { return tok }, 1 << 40,
			func(err error) bool { return err != nil && !errors.Is(err, ledger.ErrNotOwner) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newPGBatchRig(t, pgtest.URL(t), "", n)
			errs, _ := r.together(t, func(i int) error {
				tok, status := r.tokens[i], 201
				if i == odd {
					tok, status = tc.token(tok), tc.status
				}
				return r.s.Complete(t.Context(), r.keys[i], tok, ledger.Outcome{Status: status})
			})
			for i, err := range errs {
				switch {
				case i == odd && !tc.wantErr(err):
					t.Errorf("the %s Complete: %v", tc.name, err)
				case i != odd && err != nil:
					t.Errorf("Complete %d beside a %s one: %v; want nil", i, tc.name, err)
				}
			}
			for i, k := range r.keys {
				rec, err := r.s.Get(t.Context(), k)
				want := ledger.StateCompleted
				if i == odd {
					want = ledger.StateInProgress
				}
				if err != nil || rec.State != want {
					t.Errorf("%s: %v, %s; want %s", k.Key, err, rec.State, want)
				}
			}
			if calls, _ := pgledger.SharedStatements(r.s); calls != n-1 {
				t.Fatalf("%d statements shared a round trip; want %d", calls, n-1)
			}
		})
	}
}

func TestBatchLostCommitReachesEveryCall(t *testing.T) {
	// The batch runs and commits, and its answer is lost: every call of
	// it gets the error a lone statement's lost answer gives, and every
	// one of them was written ("maybe written" is the truth).
	const n = 5
	url := pgtest.URL(t)
	pc, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	proxy := pgtest.StartCutProxy(t, net.JoinHostPort(pc.Host, strconv.Itoa(int(pc.Port))))
	r := newPGBatchRig(t, url, proxy.Addr().String(), n)
	// Armed once the first statement is back, so the batch's is the one
	// cut.
	r.tracer.afterHeld = func() { proxy.Arm(pgtest.CutAfterStatement) }
	errs, _ := r.together(t, func(i int) error {
		return r.s.MarkSending(t.Context(), r.keys[i], r.tokens[i])
	})
	if errs[0] != nil {
		t.Fatalf("lone statement: %v", errs[0])
	}
	for i := 1; i < n; i++ {
		if errs[i] == nil || errors.Is(errs[i], ledger.ErrNotOwner) {
			t.Errorf("statement %d of the batch: %v; want the lost answer's error", i, errs[i])
		}
		rec, err := r.s.Get(t.Context(), r.keys[i])
		if err != nil || !rec.Sending {
			t.Errorf("%s: %v, sending %v; want written", r.keys[i].Key, err, rec.Sending)
		}
	}
	if calls, _ := pgledger.SharedStatements(r.s); calls != n-1 {
		t.Fatalf("%d statements shared a round trip; want %d", calls, n-1)
	}
}

func TestBatchCallerDeadlineEndsWaitOnLockedTable(t *testing.T) {
	// Another transaction holds the table in EXCLUSIVE mode: the first
	// statement waits for it until its short deadline; the statements
	// queued behind it then go as one batch, which waits too, and each
	// caller leaves at its own deadline, well before twice it.
	const n = 4
	const lead, bound = 200 * time.Millisecond, time.Second
	r := newPGBatchRig(t, pgtest.URL(t), "", n)
	lock, err := r.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(context.Background())
	if _, err := lock.Exec(t.Context(), "LOCK TABLE "+pgledger.DefaultTable+" IN EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	errs := make([]error, n)
	took := make([]time.Duration, n)
	call := func(i int, d time.Duration) {
		ctx, cancel := context.WithTimeout(t.Context(), d)
		defer cancel()
		start := time.Now()
		errs[i] = r.s.MarkSending(ctx, r.keys[i], r.tokens[i])
		took[i] = time.Since(start)
	}
	var wg sync.WaitGroup
	wg.Go(func() { call(0, lead) })
	for end := time.Now().Add(time.Minute); !pgledger.BatchBusy(r.s); runtime.Gosched() {
		if time.Now().After(end) {
			t.Fatal("the first statement never started")
		}
	}
	for i := 1; i < n; i++ {
		wg.Go(func() { call(i, bound) })
	}
	wg.Wait()
	for i := 1; i < n; i++ {
		if !errors.Is(errs[i], context.DeadlineExceeded) {
			t.Errorf("call %d: %v; want its deadline", i, errs[i])
		}
		if took[i] >= 2*bound {
			t.Errorf("call %d waited %v; its bound is %v", i, took[i], bound)
		}
	}
	calls, _ := pgledger.SharedStatements(r.s)
	t.Logf("%d statements went in a shared round trip", calls)
}

// lockRow holds the row of k locked in a transaction of its own, as an
// atomic transaction of another process (or one whose commit's answer was
// lost, which the server keeps open) does, until the test ends or the
// returned transaction is rolled back.
func lockRow(t *testing.T, pool *pgxpool.Pool, k ledger.Key) pgx.Tx {
	t.Helper()
	tx, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(context.Background()) })
	if _, err := tx.Exec(t.Context(), "SELECT 1 FROM "+pgledger.DefaultTable+" WHERE id = $1 FOR UPDATE", k.ID()); err != nil {
		t.Fatal(err)
	}
	return tx
}

func TestBatchRowLockedElsewhereHoldsOnlyItsOwnCall(t *testing.T) {
	// One action's row is locked by another transaction when its
	// statement shares a batch with others': the batch waits for the lock
	// no longer than lockWait, and the others' statements are written; the
	// locked one waits alone, within its own caller's bound.
	const n = 4
	const bound = 2 * time.Second
	r := newPGBatchRig(t, pgtest.URL(t), "", n)
	lockRow(t, r.pool, r.keys[0])
	key := func(i int) int { return (i + 1) % n } // the lone call is on key 1; key 0 goes last, in the batch
	errs, _ := r.together(t, func(i int) error {
		ctx, cancel := context.WithTimeout(t.Context(), bound)
		defer cancel()
		return r.s.MarkSending(ctx, r.keys[key(i)], r.tokens[key(i)])
	})
	for i, err := range errs {
		locked := key(i) == 0
		switch {
		case locked && !errors.Is(err, context.DeadlineExceeded):
			t.Errorf("the locked row's statement: %v; want its caller's deadline", err)
		case !locked && err != nil:
			t.Errorf("MarkSending of %s beside a locked row: %v; want nil", r.keys[key(i)].Key, err)
		}
	}
	if calls, _ := pgledger.SharedStatements(r.s); calls != n-1 {
		t.Fatalf("%d statements shared a round trip; want %d", calls, n-1)
	}
}

func TestLoneStatementOnALockedRowHoldsNoOtherCall(t *testing.T) {
	// The lone round trip is on a row another transaction holds locked:
	// it gives the lock up after lockWait and waits for it outside the
	// batches, so the statements that queued behind it go on.
	const n = 4
	r := newPGBatchRig(t, pgtest.URL(t), "", n)
	lockRow(t, r.pool, r.keys[0])
	lone := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		lone <- r.s.MarkSending(ctx, r.keys[0], r.tokens[0])
	}()
	for end := time.Now().Add(time.Minute); !pgledger.BatchBusy(r.s); runtime.Gosched() {
		if time.Now().After(end) {
			t.Fatal("the lone statement never started")
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := 1; i < n; i++ {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			defer cancel()
			errs[i] = r.s.MarkSending(ctx, r.keys[i], r.tokens[i])
		})
	}
	wg.Wait()
	for i := 1; i < n; i++ {
		if errs[i] != nil {
			t.Errorf("MarkSending of %s behind a statement on a locked row: %v; want nil", r.keys[i].Key, errs[i])
		}
	}
	if err := <-lone; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the locked row's statement: %v; want its caller's deadline", err)
	}
}
