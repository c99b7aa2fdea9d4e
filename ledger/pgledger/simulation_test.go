package pgledger_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/retrybudget/retrybudget/faultsim"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger/pgtest"
)

// TestSimulation runs the fault simulator (faultsim, which lists
// the faults and the invariants) against the PostgreSQL store, on a
// private server (or DATABASE_URL), in real time with a 300 ms lease. On
// top of the simulator's faults, its store calls' connections are cut for
// real (pgtest.CutProxy): before a statement, in the middle of its
// message, or after it committed with its answer lost (every lost reply
// is such a cut here), and an Atomic handler's COMMIT is cut before it is
// sent or after it ran; a batch of the store's concurrent statements is
// cut part-way (nothing commits) or after its commit ran (strikeDB). A failing schedule prints its seed; rerun it with
// -sim.seed=N (or RETRYBUDGET_SIM_SEED=N). The CI budget is
// simPostgresCI schedules, from a first seed that moves with each run
// (-sim.from=N fixes it); -sim.schedules=N or RETRYBUDGET_LONG=1
// (simPostgresLong) runs more.
func TestSimulation(t *testing.T) {
	w := postgresWorld()
	t.Run(w.Name, func(t *testing.T) { faultsim.Simulate(t, w) })
}

// The PostgreSQL world's seed budgets: in CI, sized to add about half a minute
// with -race on two cores; in long mode, about half an hour.
const (
	simPostgresCI   = 32
	simPostgresLong = 1000
)

// simPoolConns is the shared pool's size: every schedule running at once
// (Parallel) has up to two processes, four jobs and a Monitor.
const simPoolConns = 40

// postgresWorld is pgledger.Store in real time with a 300 ms lease, each
// schedule on a table of its own in one schema.
func postgresWorld() *faultsim.World {
	w := &faultsim.World{Name: "PostgreSQL", Lease: 300 * time.Millisecond, Slack: 250 * time.Millisecond,
		Inbound: true, CI: simPostgresCI, Long: simPostgresLong, Parallel: 8}
	db := &simDB{}
	w.Setup = db.setup
	w.Open = func(t *testing.T, r *faultsim.Run) (ledger.Store, func(*faultsim.Run, bool)) {
		return db.open(t, r), nil
	}
	w.Cut = db.cut
	w.Tx = db.tx
	w.Stall = db.stall
	w.Batches = &faultsim.Batching{Cut: true, On: func(*faultsim.Schedule) bool { return true }}
	return w
}

// simDB is the database the PostgreSQL world's schedules share.
type simDB struct {
	url, schema string
	target      string // the server's "host:port", for a CutProxy
	pool        *pgxpool.Pool
	// shared and batches count the statements of the schedules' stores
	// that went in a shared round trip, and those round trips.
	shared, batches atomic.Int64
}

func (db *simDB) setup(t *testing.T) {
	db.url = pgtest.URL(t)
	db.schema = pgtest.Schema(t, db.url)
	cfg, err := pgxpool.ParseConfig(db.url)
	if err != nil {
		t.Fatal(err)
	}
	db.target = net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port)))
	cfg.ConnConfig.RuntimeParams["search_path"] = db.schema
	cfg.MaxConns = simPoolConns
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close) // before the schema's drop: cleanups run last first
	db.pool = pool
	t.Cleanup(func() {
		t.Logf("%d store statements went in %d shared round trips", db.shared.Load(), db.batches.Load())
	})
}

// table is the ledger table of r's schedule.
func (db *simDB) table(r *faultsim.Run) string { return fmt.Sprintf("sim_%d", r.Schedule().Seed) }

// store returns the schedule's Store over conns.
func (db *simDB) store(t testing.TB, r *faultsim.Run, conns pgledger.DB) *pgledger.Store {
	return unmigrated(t, conns, pgledger.Config{Schema: db.schema, Table: db.table(r)})
}

// open creates r's table on the shared pool, dropped when t ends, and
// returns its Store: on the shared pool, or, for a schedule with a store
// latency or a batch fault, on a pool of its own through a CutProxy that
// adds the latency and cuts the batch the simulator strikes (strikeDB).
// Its unbatched twin, for a takeover inside a batch, is on the shared pool.
func (db *simDB) open(t *testing.T, r *faultsim.Run) ledger.Store {
	var conns pgledger.DB = db.pool
	if sch := r.Schedule(); sch.StoreLatency > 0 || sch.Batch != nil {
		proxy := pgtest.StartCutProxy(t, db.target)
		proxy.SetLatency(sch.StoreLatency)
		conns = strikeDB{Pool: pgtest.PoolVia(t, db.url, db.schema, proxy.Addr().String()), r: r, proxy: proxy}
	}
	s := db.store(t, r, conns)
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.SetUnbatched(unmigrated(t, db.pool, pgledger.Config{Schema: db.schema, Table: db.table(r), MaxBatch: 1}))
	t.Cleanup(func() {
		calls, batches := pgledger.SharedStatements(s)
		db.shared.Add(calls)
		db.batches.Add(batches)
		db.drop(t, db.table(r))
	})
	return s
}

// strikeDB is a pool through a CutProxy that shows each batch of two or
// more statements (a shared round trip of the Store's concurrent calls)
// to the simulator before sending it, and arms the proxy to cut it as the
// simulator says: after its commit ran (the reply lost) or part-way
// through (nothing commits).
type strikeDB struct {
	*pgxpool.Pool
	r     *faultsim.Run
	proxy *pgtest.CutProxy
}

// batchCuts are the CutProxy modes of the simulator's batch strikes.
var batchCuts = map[faultsim.Strike]pgtest.CutMode{
	faultsim.StrikeLost: pgtest.CutAfterBatch,
	faultsim.StrikeCut:  pgtest.CutTornBatch,
}

// SendBatch sends b through the proxy, struck as the simulator says. The
// Store's statements take the action's ID first and, when fenced, the
// token second.
func (d strikeDB) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	// The store's statements, without the lock_timeout every round trip
	// of its batcher sets first (it takes no arguments).
	var calls []faultsim.BatchCall
	for _, q := range b.QueuedQueries {
		if len(q.Arguments) == 0 {
			continue
		}
		c := faultsim.BatchCall{}
		c.ID, _ = q.Arguments[0].(string)
		if len(q.Arguments) >= 2 {
			c.Token, _ = q.Arguments[1].(int64)
		}
		calls = append(calls, c)
	}
	if len(calls) < 2 {
		return d.Pool.SendBatch(ctx, b)
	}
	mode, ok := batchCuts[d.r.StrikeBatch(calls)]
	if !ok {
		return d.Pool.SendBatch(ctx, b)
	}
	before := d.proxy.Cuts()
	d.proxy.Arm(mode)
	return struckBatch{BatchResults: d.Pool.SendBatch(ctx, b), d: d, before: before}
}

// struckBatch is a struck batch's results: Close, which reads the
// commit's answer, logs whether the proxy cut it, and disarms the proxy.
type struckBatch struct {
	pgx.BatchResults
	d      strikeDB
	before int
}

func (b struckBatch) Close() error {
	err := b.BatchResults.Close()
	b.d.proxy.Arm(pgtest.PassThrough)
	b.d.r.Logf("store: the batch's connection was cut: %v (%v)", b.d.proxy.Cuts() > b.before, err)
	return err
}

// drop drops a schedule's table.
func (db *simDB) drop(t *testing.T, table string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.pool.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{db.schema, table}.Sanitize()); err != nil {
		t.Errorf("drop %s: %v", table, err)
	}
}

// statementCuts are the CutProxy modes of the simulator's cuts.
var statementCuts = map[faultsim.Cut]pgtest.CutMode{
	faultsim.CutBefore: pgtest.CutBeforeStatement,
	faultsim.CutTorn:   pgtest.CutTornStatement,
	faultsim.CutAfter:  pgtest.CutAfterStatement,
}

// cut runs op on a Store over a connection of its own, through a
// CutProxy armed to cut its first statement as c says.
func (db *simDB) cut(ctx context.Context, r *faultsim.Run, c faultsim.Cut, op func(context.Context, ledger.Store) error) error {
	proxy := pgtest.StartCutProxy(r.T(), db.target)
	cfg, err := viaProxy(db.url, db.schema, proxy)
	if err != nil {
		return err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn.Close(cctx)
	}()
	proxy.Arm(statementCuts[c])
	err = op(ctx, db.store(r.T(), r, conn))
	r.Logf("store: the connection was cut: %v", proxy.Cuts() > 0)
	return err
}

// tx gives an inbound schedule the store's own transactions, on a pool
// through a CutProxy that cuts the COMMIT the schedule says, and an
// effects table whose rows are the handler's effects.
func (db *simDB) tx(t *testing.T, r *faultsim.Run) *faultsim.TxWorld {
	proxy := pgtest.StartCutProxy(t, db.target)
	pool := pgtest.PoolVia(t, db.url, db.schema, proxy.Addr().String())
	effects := pgx.Identifier{db.schema, db.table(r) + "_effects"}.Sanitize()
	if _, err := db.pool.Exec(t.Context(), "CREATE TABLE "+effects+" (k int NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.drop(t, db.table(r)+"_effects") })
	return &faultsim.TxWorld{
		Store: db.store(t, r, pool),
		Effect: func(ctx context.Context, i int) (bool, error) {
			tx, ok := pgledger.Tx(ctx)
			if !ok {
				return false, nil
			}
			_, err := tx.Exec(ctx, "INSERT INTO "+effects+" (k) VALUES ($1)", i)
			return true, err
		},
		Effects: func(i int) int {
			var n int
			if err := db.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+effects+" WHERE k = $1", i).Scan(&n); err != nil {
				t.Errorf("count effects: %v", err)
			}
			return n
		},
		CutCommit: func(c faultsim.Cut) {
			proxy.Arm(map[faultsim.Cut]pgtest.CutMode{0: pgtest.PassThrough,
				faultsim.CutBefore: pgtest.CutBeforeCommit, faultsim.CutAfter: pgtest.CutAfterCommit}[c])
		},
	}
}

// stall locks the schedule's table against writes for a lease and a half,
// as a long transaction holding a lock would: a write sent meanwhile waits
// in the server, then runs and commits, even when its client gave up
// (PostgreSQL notices a closed connection only when it answers). Reads go
// on. A stall that finds the table stalled already leaves it so, until the
// earlier stall ends: waiting for that lock here would hold the stalled
// call's own goroutine in the harness, past the deadline the simulator
// then charges to the call.
func (db *simDB) stall(r *faultsim.Run) {
	ctx := context.Background()
	tx, err := db.pool.Begin(ctx)
	if err == nil {
		_, err = tx.Exec(ctx, "LOCK TABLE "+pgx.Identifier{db.schema, db.table(r)}.Sanitize()+" IN EXCLUSIVE MODE NOWAIT")
	}
	if err != nil {
		if tx != nil {
			tx.Rollback(ctx)
		}
		if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "55P03" {
			r.Logf("store: writes stalled already")
			return
		}
		r.Logf("store: stall failed: %v", err)
		return
	}
	r.Logf("store: writes stalled")
	r.Go(func() {
		time.Sleep(r.World().Lease * 3 / 2)
		tx.Rollback(ctx)
		r.Logf("store: stall over")
	})
}
