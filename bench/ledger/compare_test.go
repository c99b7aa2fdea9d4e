package ledgerbench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/ledgertest"
	"github.com/retrybudget/retrybudget/ledger/pgledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger/pgtest"
)

// compareEnv turns TestCompare on.
const compareEnv = "LEDGER_COMPARE"

// contender is one Transport under test, and what its store spent.
type contender struct {
	name string
	rt   http.RoundTripper
	// fresh, when set, builds the contender's Transport anew for each
	// round: for a store that keeps its records in this process, whose
	// heap would otherwise grow by every action of the run and make every
	// contender pay the garbage collector for it.
	fresh func() http.RoundTripper
	// trips returns the store round trips so far; nil without a store
	// that makes any.
	trips func() int64
	// spent returns the store's own time so far, in µs; nil where there
	// is none to read.
	spent func(ctx context.Context) (micros float64, err error)
}

// TestCompare runs keyed POSTs through the Transport with each ledger and
// without one in many short rounds, contenders in a fresh random order each
// round, and prints per concurrency the median actions/s of each, the
// median of its per-round ratio to the ledger-free Transport (each taken
// from runs a fraction of a second apart, so load from other processes
// mostly cancels out), and per action its store round trips and the
// store's own time. Two columns say how far the machine limits a ratio:
// "cores" is how many of the machine's cores every process kept busy
// while the contender ran, and "ceiling" is the ledger-free Transport's
// machine CPU per action over the contender's, the ratio the contender
// would reach if both kept every core busy.
func TestCompare(t *testing.T) {
	if os.Getenv(compareEnv) == "" {
		t.Skipf("set %s=1 to run the interleaved comparison", compareEnv)
	}
	const slice = 300 * time.Millisecond
	rounds := 9
	if n, err := strconv.Atoi(os.Getenv("LEDGER_COMPARE_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	concurrency := []int{1, 16, 64}
	if c, err := strconv.Atoi(os.Getenv("LEDGER_COMPARE_CONC")); err == nil && c > 0 {
		concurrency = []int{c}
	}
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"ch_1","status":"succeeded"}`))
	}))
	t.Cleanup(provider.Close)
	base := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}
	t.Cleanup(base.CloseIdleConnections)
	contenders := newContenders(t, base)
	if only := os.Getenv("LEDGER_COMPARE_ONLY"); only != "" {
		contenders = slices.DeleteFunc(contenders, func(c contender) bool {
			return c.name != "no ledger" && !slices.Contains(strings.Split(only, ","), c.name)
		})
	}

	var seq atomic.Int64
	run := func(ct contender, conc int, d time.Duration) int64 {
		rt := ct.rt
		if ct.fresh != nil {
			rt = ct.fresh()
		}
		var n atomic.Int64
		end := time.Now().Add(d)
		var wg sync.WaitGroup
		for range conc {
			wg.Go(func() {
				for time.Now().Before(end) {
					key := "a" + strconv.FormatInt(seq.Add(1), 10)
					if err := post(rt, provider.URL, key); err != nil {
						t.Errorf("%s: %v", ct.name, err)
						return
					}
					n.Add(1)
				}
			})
		}
		wg.Wait()
		return n.Load()
	}
	for _, ct := range contenders {
		run(ct, 4, 100*time.Millisecond) // warm: connections, scripts, statements
	}

	const baseline = "no ledger"
	for _, conc := range concurrency {
		type figures struct{ rate, ratio, trips, micros, own, machine, cores []float64 }
		got := map[string]*figures{}
		for _, ct := range contenders {
			got[ct.name] = &figures{}
		}
		for range rounds {
			order := slices.Clone(contenders)
			rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			rates := map[string]float64{}
			for _, ct := range order {
				// The store's counters are read outside the window the
				// round trips are counted in: reading them is a round trip.
				var micros0 float64
				if ct.spent != nil {
					var err error
					if micros0, err = ct.spent(t.Context()); err != nil {
						t.Fatal(err)
					}
				}
				var trips0 int64
				if ct.trips != nil {
					trips0 = ct.trips()
				}
				own0, machine0 := cpuTimes(t)
				start := time.Now()
				n := run(ct, conc, slice)
				elapsed := time.Since(start)
				rate := float64(n) / elapsed.Seconds()
				own1, machine1 := cpuTimes(t)
				rates[ct.name] = rate
				f := got[ct.name]
				f.rate = append(f.rate, rate)
				f.cores = append(f.cores, float64(machine1-machine0)/float64(elapsed))
				if n > 0 {
					f.own = append(f.own, float64((own1-own0).Microseconds())/float64(n))
					f.machine = append(f.machine, float64((machine1-machine0).Microseconds())/float64(n))
				}
				if ct.trips != nil && n > 0 {
					f.trips = append(f.trips, float64(ct.trips()-trips0)/float64(n))
				}
				if ct.spent != nil && n > 0 {
					micros, err := ct.spent(t.Context())
					if err != nil {
						t.Fatal(err)
					}
					f.micros = append(f.micros, (micros-micros0)/float64(n))
				}
			}
			for name, f := range got {
				f.ratio = append(f.ratio, rates[name]/rates[baseline])
			}
		}
		var b strings.Builder
		fmt.Fprintf(&b, "concurrency %d, %d rounds of %v:\n", conc, rounds, slice)
		fmt.Fprintf(&b, "%-22s %12s %8s %12s %16s %14s %14s %6s %8s\n", "", "actions/s", "ratio", "trips/action", "store µs/action",
			"CPU µs/action", "machine CPU µs", "cores", "ceiling")
		for _, ct := range contenders {
			f := got[ct.name]
			fmt.Fprintf(&b, "%-22s %12.0f %8.3f %12s %16s %14s %14s %6.2f %8.3f\n", ct.name, median(f.rate), median(f.ratio),
				orDash(f.trips, "%.2f"), orDash(f.micros, "%.1f"), orDash(f.own, "%.0f"), orDash(f.machine, "%.0f"),
				median(f.cores), median(got[baseline].machine)/median(f.machine))
		}
		t.Log("\n" + b.String())
	}
}

// post sends one keyed POST under its own action and reads the answer.
func post(rt http.RoundTripper, url, key string) error {
	ctx := retrybudget.WithAction(context.Background(), retrybudget.Action{Tenant: "bench", Operation: "charge", Key: key})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader([]byte(`{"amount":1999}`)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// newContenders returns the Transport without a ledger, then with each
// store, batched (the default) and not, and after each store its floor:
// the ledger-free Transport making two bare writes to it per action
// (bareWrites).
func newContenders(t *testing.T, base http.RoundTripper) []contender {
	transport := func(s ledger.Store) http.RoundTripper {
		cfg := retrybudget.Config{Base: base, KeysHonoured: true}
		if s != nil {
			cfg.Ledger = retrybudget.LedgerConfig{Store: s}
		}
		return retrybudget.New(cfg)
	}
	out := []contender{
		{name: "no ledger", rt: transport(nil)},
		// Every action is a new record, kept for the round: no cap.
		{name: "memory", fresh: func() http.RoundTripper {
			return transport(ledger.NewMemory(ledger.MemoryConfig{MaxRecords: -1, MaxBytes: -1}))
		}},
	}

	rsrv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: rsrv.Addr, PoolSize: 256})
	t.Cleanup(func() { client.Close() })
	hook := &redistest.RoundTrips{}
	client.AddHook(hook)
	redisSpent := func(ctx context.Context) (float64, error) {
		l, err := redistest.ReadLoad(ctx, client)
		if err != nil {
			return 0, err
		}
		s := l.Spent(redistest.Load{}, "evalsha", "eval")
		return float64(s.Usec), nil
	}
	for _, mb := range []int{0, 1} {
		s, err := ledger.NewRedis(client, ledger.RedisConfig{Prefix: redistest.Prefix(t) + strconv.Itoa(mb) + ":", MaxBatch: mb,
			Config: ledger.Config{FingerprintKeys: ledgertest.FingerprintKeys()}})
		if err != nil {
			t.Fatal(err)
		}
		name := "redis"
		if mb == 1 {
			name = "redis, unbatched"
		}
		out = append(out, contender{name: name, rt: transport(s), trips: hook.N.Load, spent: redisSpent})
	}
	out = append(out, contender{name: "redis 2 bare writes", rt: newBareWrites(transport(nil), redisBareWrite(t, client)),
		trips: hook.N.Load, spent: redisSpent})

	psrv := pgtest.Start(t)
	stats := enableStatements(t, psrv)
	tracer := &statementCount{}
	cfg, err := pgxpool.ParseConfig(psrv.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 16
	cfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	pgSpent := func(ctx context.Context) (float64, error) {
		var ms float64
		err := stats.QueryRow(ctx, `SELECT coalesce(sum(total_exec_time), 0) FROM pg_stat_statements
			WHERE query LIKE '%retrybudget_ledger%' OR query LIKE '%bare_writes%'`).Scan(&ms)
		return ms * 1000, err
	}
	for _, mb := range []int{0, 1} {
		pcfg := pgledger.Config{MaxBatch: mb, Table: "retrybudget_ledger_" + strconv.Itoa(mb),
			Config: ledger.Config{FingerprintKeys: ledgertest.FingerprintKeys()}}
		s, err := pgledger.New(pool, pcfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		name := "postgres"
		if mb == 1 {
			name = "postgres, unbatched"
		} else {
			t.Cleanup(func() { logStatements(t, stats, pcfg.Table) })
		}
		out = append(out, contender{name: name, rt: transport(s), trips: tracer.n.Load, spent: pgSpent})
	}
	out = append(out, contender{name: "postgres 2 bare writes", rt: newBareWrites(transport(nil), pgBareWrite(t, pool)),
		trips: tracer.n.Load, spent: pgSpent})
	return out
}

// enableStatements loads pg_stat_statements into the private server srv
// (a restart) and returns a connection to read it.
func enableStatements(t *testing.T, srv *pgtest.Server) *pgx.Conn {
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	srv.Restart()
	if conn, err = pgx.Connect(ctx, srv.URL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "ALTER SYSTEM SET pg_stat_statements.track_planning = on"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		t.Fatal(err)
	}
	return conn
}

// logStatements logs, for the statements on table that ran at least 100
// times, how often they ran, the server's mean µs executing one, how often
// the server planned them and its mean µs per plan (pg_stat_statements;
// a statement whose plans stay few runs on a generic plan, so planning is
// not in its cost) and their length: where the PostgreSQL column's store
// µs go, statement by statement.
func logStatements(t *testing.T, stats *pgx.Conn, table string) {
	rows, err := stats.Query(context.Background(), `SELECT calls, mean_exec_time * 1000, plans, mean_plan_time * 1000, length(query),
		left(regexp_replace(query, '\s+', ' ', 'g'), 70)
		FROM pg_stat_statements WHERE query LIKE '%' || $1 || '%' AND calls >= 100
		ORDER BY total_exec_time DESC`, table)
	if err != nil {
		t.Errorf("reading pg_stat_statements: %v", err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var calls int64
		var mean, planMean float64
		var plans int64
		var length int
		var query string
		if err := rows.Scan(&calls, &mean, &plans, &planMean, &length, &query); err != nil {
			t.Errorf("reading pg_stat_statements: %v", err)
			return
		}
		t.Logf("%s: %9d runs, %6.1f µs each, %d plans, %6.1f µs each, %5d characters: %s", table, calls, mean, plans, planMean, length, query)
	}
	if err := rows.Err(); err != nil {
		t.Errorf("reading pg_stat_statements: %v", err)
	}
}

// statementCount is a pgx tracer counting round trips: a statement or a
// batch each.
type statementCount struct{ n atomic.Int64 }

func (c *statementCount) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *statementCount) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *statementCount) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *statementCount) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *statementCount) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func orDash(xs []float64, format string) string {
	if len(xs) == 0 {
		return "-"
	}
	return fmt.Sprintf(format, median(xs))
}
