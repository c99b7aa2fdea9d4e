package pgledger_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/retrybudget/retrybudget/idempotency"
	"github.com/retrybudget/retrybudget/ledger/ledgertest"
	"github.com/retrybudget/retrybudget/ledger/pgledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger/pgtest"
)

// atomicLease is the middleware's lease in these tests: a dead server's
// action is retried after it.
const atomicLease = 500 * time.Millisecond

// effectsDB is a database with a fresh schema holding the ledger and the
// application's own table, effects, in which the handler's effect is one
// row.
type effectsDB struct {
	url, schema string
	pool        *pgxpool.Pool // direct, never through a proxy
}

func newEffectsDB(t *testing.T) effectsDB {
	t.Helper()
	url := pgtest.URL(t)
	db := effectsDB{url: url, schema: pgtest.Schema(t, url)}
	db.pool = db.open(t, "")
	if err := unmigrated(t, db.pool, pgledger.Config{}).Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := db.pool.Exec(t.Context(), "CREATE TABLE effects (id bigserial PRIMARY KEY, k text NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	return db
}

// open returns a pool on the schema, through addr ("host:port") when set.
func (db effectsDB) open(t testing.TB, addr string) *pgxpool.Pool {
	t.Helper()
	return pgtest.PoolVia(t, db.url, db.schema, addr)
}

// effects counts the effects at their one place, the table.
func (db effectsDB) effects(t *testing.T) int {
	t.Helper()
	var n int
	if err := db.pool.QueryRow(t.Context(), "SELECT count(*) FROM effects").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// effectHandler does its one effect, a row, in the action's transaction
// and answers with the row's ID. afterEffect, when set, runs after the
// insert, before the answer.
func effectHandler(afterEffect func(r *http.Request)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tx, ok := pgledger.Tx(r.Context())
		if !ok {
			http.Error(w, "no transaction", http.StatusInternalServerError)
			return
		}
		var id int64
		if err := tx.QueryRow(r.Context(), "INSERT INTO effects (k) VALUES ($1) RETURNING id", r.Header.Get("Idempotency-Key")).Scan(&id); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if afterEffect != nil {
			afterEffect(r)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"effect":%d}`, id)
	})
}

// atomicServer serves effectHandler behind the middleware with an atomic
// PostgreSQL store on pool.
func atomicServer(t testing.TB, pool *pgxpool.Pool, afterEffect func(r *http.Request)) http.Handler {
	return idempotency.New(idempotency.Config{
		Store:  unmigrated(t, pool, pgledger.Config{Timeout: 2 * time.Second}),
		Atomic: true,
		Lease:  atomicLease,
		Tenant: func(*http.Request) string { return "tenant" },
		Owner:  "server",
	})(effectHandler(afterEffect))
}

type answer struct {
	status   int
	body     string
	replayed bool
}

func post(t *testing.T, url, key string) (answer, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/effects", strings.NewReader(`{"n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(b), resp.Header.Get(idempotency.HeaderReplayed) == "true"}, err
}

// retryUntilSettled posts until the answer is no longer "in progress"
// (the dead owner's lease), for at most ledgertest.PollBound.
func retryUntilSettled(t *testing.T, url, key string) answer {
	t.Helper()
	var a answer
	ledgertest.Poll(t, "the action to settle", func() bool {
		var err error
		if a, err = post(t, url, key); err != nil {
			t.Fatal(err)
		}
		return a.status != http.StatusConflict
	})
	return a
}

// TestAtomicCommitCut cuts the store's connection at the commit of the
// handler's transaction, before COMMIT reaches the server and after it
// ran, and pins exactly once: one effect, and every retry answers with
// the one stored outcome.
func TestAtomicCommitCut(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mode       pgtest.CutMode
		committed  bool
		firstRetry string // what the first retry is: "ran" or "replayed"
	}{
		{"CommitNeverArrives", pgtest.CutBeforeCommit, false, "ran"},
		{"CommitAnswerLost", pgtest.CutAfterCommit, true, "replayed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := newEffectsDB(t)
			cfg, err := pgxpool.ParseConfig(db.url)
			if err != nil {
				t.Fatal(err)
			}
			proxy := pgtest.StartCutProxy(t, net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))))
			srv := httptest.NewServer(atomicServer(t, db.open(t, proxy.Addr().String()), nil))
			defer srv.Close()

			proxy.Arm(tc.mode)
			first, err := post(t, srv.URL, "k1")
			if err != nil {
				t.Fatal(err)
			}
			if proxy.Cuts() != 1 {
				t.Fatalf("the proxy cut %d connections, want 1 (first answer %+v)", proxy.Cuts(), first)
			}
			if first.status != http.StatusServiceUnavailable {
				t.Fatalf("first answer %d %s; want 503, the commit's fate being unknown to the server", first.status, first.body)
			}
			want := 0
			if tc.committed {
				want = 1
			}
			if n := db.effects(t); n != want {
				t.Fatalf("%d effects after the cut, want %d", n, want)
			}

			retry := retryUntilSettled(t, srv.URL, "k1")
			if retry.status != http.StatusCreated || retry.replayed != (tc.firstRetry == "replayed") {
				t.Fatalf("retry: %+v, want 201 %s", retry, tc.firstRetry)
			}
			again, err := post(t, srv.URL, "k1")
			if err != nil {
				t.Fatal(err)
			}
			if again.status != http.StatusCreated || !again.replayed || again.body != retry.body {
				t.Fatalf("second retry %+v, want the stored outcome %q replayed", again, retry.body)
			}
			if n := db.effects(t); n != 1 {
				t.Fatalf("%d effects, want exactly 1", n)
			}
		})
	}
}

// TestAtomicHandlerFailureRollsBack pins that a failed answer takes its
// effect with it: the action is failed, and the retry runs once.
func TestAtomicHandlerFailureRollsBack(t *testing.T) {
	db := newEffectsDB(t)
	fail := true
	srv := httptest.NewServer(atomicServer(t, db.pool, func(r *http.Request) {
		if fail {
			fail = false
			panic(http.ErrAbortHandler)
		}
	}))
	defer srv.Close()
	if _, err := post(t, srv.URL, "k1"); err == nil {
		t.Fatal("the aborted handler answered")
	}
	if n := db.effects(t); n != 0 {
		t.Fatalf("%d effects after the handler panicked, want 0", n)
	}
	if a := retryUntilSettled(t, srv.URL, "k1"); a.status != http.StatusCreated || a.replayed {
		t.Fatalf("retry %+v", a)
	}
	if n := db.effects(t); n != 1 {
		t.Fatalf("%d effects, want 1", n)
	}
}

// TestAtomicRefusalOverAbortedTransaction pins what an Atomic handler's
// answer over a transaction one of its statements aborted becomes: a 4xx
// (a unique violation it caught, answered 409) is the action's answer,
// stored and replayed, though nothing of the transaction could commit; a
// 2xx claims writes that were rolled back, so the action is failed and
// runs again.
func TestAtomicRefusalOverAbortedTransaction(t *testing.T) {
	db := newEffectsDB(t)
	if _, err := db.pool.Exec(t.Context(), "CREATE UNIQUE INDEX ON effects (k)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.pool.Exec(t.Context(), "INSERT INTO effects (k) VALUES ('taken')"); err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	var mu sync.Mutex
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		runs[r.URL.Path]++
		mu.Unlock()
		tx, _ := pgledger.Tx(r.Context())
		_, err := tx.Exec(r.Context(), "INSERT INTO effects (k) VALUES ('taken')")
		if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "23505" && r.URL.Path == "/refuse" {
			http.Error(w, "already registered", http.StatusConflict)
			return
		}
		w.WriteHeader(http.StatusCreated) // a bug: the insert failed
	})
	srv := httptest.NewServer(idempotency.New(idempotency.Config{
		Store:  unmigrated(t, db.pool, pgledger.Config{Timeout: 2 * time.Second}),
		Atomic: true, Lease: atomicLease, Owner: "server",
		Tenant: func(*http.Request) string { return "tenant" },
	})(handler))
	defer srv.Close()
	send := func(path string) (int, bool) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+path, strings.NewReader(`{}`))
		req.Header.Set("Idempotency-Key", "k-"+path)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get(idempotency.HeaderReplayed) == "true"
	}
	for i, want := range []struct {
		status   int
		replayed bool
	}{{http.StatusConflict, false}, {http.StatusConflict, true}} {
		if status, replayed := send("/refuse"); status != want.status || replayed != want.replayed {
			t.Errorf("refusal, request %d: %d, replayed %v; want %d, replayed %v", i+1, status, replayed, want.status, want.replayed)
		}
	}
	for i := range 2 {
		if status, _ := send("/claim"); status != http.StatusServiceUnavailable {
			t.Errorf("2xx over an aborted transaction, request %d: %d; want 503", i+1, status)
		}
	}
	if runs["/refuse"] != 1 || runs["/claim"] != 2 {
		t.Errorf("runs %v; want the refusal once, the false claim on every request", runs)
	}
	if n := db.effects(t); n != 1 {
		t.Errorf("%d rows; want only the one there before", n)
	}
}

// TestAtomicOwnerCannotCommit pins that the transaction an Atomic handler
// gets refuses its Commit: a helper that commits what it is given (and
// ignores the error) leaves the effect to commit with the record, once.
func TestAtomicOwnerCannotCommit(t *testing.T) {
	db := newEffectsDB(t)
	var commitErrs []error
	var mu sync.Mutex
	srv := httptest.NewServer(atomicServer(t, db.pool, func(r *http.Request) {
		tx, _ := pgledger.Tx(r.Context())
		err := tx.Commit(r.Context())
		mu.Lock()
		commitErrs = append(commitErrs, err)
		mu.Unlock()
	}))
	defer srv.Close()
	first, err := post(t, srv.URL, "k1")
	if err != nil || first.status != http.StatusCreated {
		t.Fatalf("first: %+v, %v", first, err)
	}
	if again, err := post(t, srv.URL, "k1"); err != nil || again.status != http.StatusCreated || !again.replayed || again.body != first.body {
		t.Fatalf("retry: %+v, %v; want the first answer replayed", again, err)
	}
	if n := db.effects(t); n != 1 {
		t.Fatalf("%d effects, want 1", n)
	}
	if len(commitErrs) != 1 || !errors.Is(commitErrs[0], pgledger.ErrTxOwned) {
		t.Fatalf("the handler's Commit returned %v; want one ErrTxOwned", commitErrs)
	}
}

// TestAtomicNeedsAtomicStore pins the wiring check.
func TestAtomicNeedsAtomicStore(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("New accepted Config.Atomic over a Memory store")
		}
	}()
	idempotency.New(idempotency.Config{Atomic: true})
}
