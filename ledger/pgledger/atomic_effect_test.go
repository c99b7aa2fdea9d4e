package pgledger_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/retrybudget/retrybudget/idempotency"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/ledgertest"
	"github.com/retrybudget/retrybudget/ledger/pgledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger/pgtest"
)

// helperProviderEnv passes the helper process of
// TestAtomicServerKilledAfterMarkedEffect the provider it charges.
const helperProviderEnv = "PGLEDGER_TEST_HELPER_PROVIDER"

// chargingHandler is an Atomic handler whose effect happens outside the
// transaction: a charge at a provider without idempotency keys. It marks
// the effect first, as the middleware's documentation asks, and does not
// charge when the mark fails. afterCharge, when set, runs after the
// charge, before the answer.
func chargingHandler(provider string, afterCharge func(r *http.Request)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := idempotency.MarkEffect(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, provider, nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		resp.Body.Close()
		if afterCharge != nil {
			afterCharge(r)
		}
		w.WriteHeader(http.StatusCreated)
	})
}

// chargingServer is the middleware in Atomic mode over chargingHandler.
func chargingServer(t testing.TB, pool *pgxpool.Pool, provider string, afterCharge func(r *http.Request)) http.Handler {
	return idempotency.New(idempotency.Config{
		Store:  unmigrated(t, pool, pgledger.Config{Timeout: 2 * time.Second}),
		Atomic: true,
		Lease:  atomicLease,
		Tenant: func(*http.Request) string { return "tenant" },
		Owner:  "server",
	})(chargingHandler(provider, afterCharge))
}

// TestAtomicServerKilledAfterMarkedEffect kills the server process
// (SIGKILL) after its Atomic handler marked an effect outside the
// transaction (MarkEffect) and did it: a charge at a provider without
// keys. The transaction died with the process, but the charge did not:
// once the dead server's lease ran out, the client's retry is answered
// 409 TypeUncertain and the handler does not run again. One charge.
func TestAtomicServerKilledAfterMarkedEffect(t *testing.T) {
	db := newEffectsDB(t)
	var charges atomic.Int32
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		charges.Add(1)
	}))
	defer provider.Close()

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestAtomicMarkedEffectHelperProcess$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), helperURLEnv+"="+db.url, helperSchemaEnv+"="+db.schema, helperProviderEnv+"="+provider.URL)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()         //nolint:errcheck // killed below
	defer cmd.Process.Kill() //nolint:errcheck // already dead when the test passes
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	expect := func(prefix string) string {
		t.Helper()
		for l := range lines {
			if rest, ok := strings.CutPrefix(l, prefix); ok {
				return rest
			}
		}
		t.Fatalf("helper exited before printing %q", prefix)
		return ""
	}
	addr := expect("LISTEN ")
	sent := make(chan error, 1)
	go func() {
		_, err := post(t, "http://"+addr, "k1")
		sent <- err
	}()
	expect("CHARGED")
	if err := cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	if err := <-sent; err == nil {
		t.Fatal("the killed server answered")
	}
	if n := charges.Load(); n != 1 {
		t.Fatalf("%d charges by the killed server, want 1", n)
	}

	srv := httptest.NewServer(chargingServer(t, db.pool, provider.URL, nil))
	defer srv.Close()
	var retry answer
	var typ string
	ledgertest.Poll(t, "the dead server's lease to run out", func() bool {
		if retry, err = post(t, srv.URL, "k1"); err != nil {
			t.Fatal(err)
		}
		typ = problemType(retry.body)
		return typ != idempotency.TypePending
	})
	if n := charges.Load(); n != 1 {
		t.Fatalf("%d charges, want 1 (the retry answered %d %s)", n, retry.status, retry.body)
	}
	if retry.status != http.StatusConflict || typ != idempotency.TypeUncertain {
		t.Fatalf("retry answered %d %s; want 409 TypeUncertain", retry.status, retry.body)
	}
	t.Logf("charges at the provider: %d; the retry answered %d %s", charges.Load(), retry.status, typ)
}

// problemType is the type of an RFC 9457 body, "" for another body.
func problemType(body string) string {
	var p struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal([]byte(body), &p)
	return p.Type
}

// TestAtomicMarkedEffectHelperProcess is the server
// TestAtomicServerKilledAfterMarkedEffect kills. It does nothing unless
// run as that helper.
func TestAtomicMarkedEffectHelperProcess(t *testing.T) {
	provider := os.Getenv(helperProviderEnv)
	if provider == "" {
		t.Skip("helper process of TestAtomicServerKilledAfterMarkedEffect")
	}
	db := effectsDB{url: os.Getenv(helperURLEnv), schema: os.Getenv(helperSchemaEnv)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := chargingServer(t, db.open(t, ""), provider, func(r *http.Request) {
		fmt.Println("CHARGED")
		<-r.Context().Done() // until killed
	})
	fmt.Println("LISTEN " + ln.Addr().String())
	_ = http.Serve(ln, h)
}

// An atomic action whose owner died is failed once its lease runs out (its
// transaction took its effects with it) unless the owner marked an effect
// outside the transaction: then it is uncertain. The mark is fenced (an
// owner whose action was taken over gets ErrNotOwner, and must not do the
// effect), and it takes no transaction slot: with every slot held, the
// owner of the open transaction still marks.
func TestAtomicMarkEffect(t *testing.T) {
	pool := pgtest.Pool(t)
	s := newStore(t, pool, pgledger.Config{MaxAtomic: 1, AtomicWait: 10 * time.Millisecond})
	const lease = 200 * time.Millisecond
	begin := func(key string) (ledger.Key, ledger.AtomicTx) {
		t.Helper()
		k := ledger.Key{Tenant: "t", Operation: "op", Key: key}
		res, err := s.Reserve(t.Context(), ledger.ReserveRequest{Key: k, Fingerprint: "fp", Owner: "o", Lease: lease})
		if err != nil || !res.Verdict.Owns() {
			t.Fatalf("reserve %s: %v %v", key, res.Verdict, err)
		}
		atx, err := s.BeginAtomic(t.Context(), k, res.Token)
		if err != nil {
			t.Fatalf("begin %s: %v", key, err)
		}
		return k, atx
	}
	// afterLease reserves k again once its owner's lease ran out.
	afterLease := func(k ledger.Key) ledger.Verdict {
		t.Helper()
		var v ledger.Verdict
		ledgertest.Poll(t, "the lease to run out", func() bool {
			res, err := s.Reserve(t.Context(), ledger.ReserveRequest{Key: k, Fingerprint: "fp", Owner: "o2", Lease: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			v = res.Verdict
			return v != ledger.VerdictPending
		})
		return v
	}

	marked, atx := begin("marked")
	// The one slot is this transaction's: the mark must not need another.
	if err := atx.MarkEffect(t.Context()); err != nil {
		t.Fatalf("MarkEffect with every slot taken: %v", err)
	}
	if err := atx.Rollback(t.Context()); err != nil { // the owner dies
		t.Fatal(err)
	}
	if v := afterLease(marked); v != ledger.VerdictUncertain {
		t.Fatalf("marked action after its lease: %v; want uncertain", v)
	}

	unmarked, atx := begin("unmarked")
	if err := atx.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	if v := afterLease(unmarked); v != ledger.VerdictRetry {
		t.Fatalf("unmarked action after its lease: %v; want retry", v)
	}
	// The old owner, taken over, may no longer mark.
	if err := atx.MarkEffect(t.Context()); !errors.Is(err, ledger.ErrNotOwner) {
		t.Fatalf("MarkEffect after a takeover: %v; want ErrNotOwner", err)
	}
}

// On a DB of one connection the mark would run inside the owner's
// transaction and be rolled back with it: MarkEffect refuses, so the owner
// does not do the effect.
func TestAtomicMarkEffectNeedsAPool(t *testing.T) {
	db := newEffectsDB(t)
	cfg, err := pgx.ParseConfig(db.url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = db.schema
	conn, err := pgx.ConnectConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	s := unmigrated(t, conn, pgledger.Config{})
	k := ledger.Key{Tenant: "t", Operation: "op", Key: "k"}
	res, err := s.Reserve(t.Context(), ledger.ReserveRequest{Key: k, Fingerprint: "fp", Owner: "o", Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	atx, err := s.BeginAtomic(t.Context(), k, res.Token)
	if err != nil {
		t.Fatal(err)
	}
	defer atx.Rollback(context.Background()) //nolint:errcheck // the test's subject is MarkEffect
	if err := atx.MarkEffect(t.Context()); !errors.Is(err, ledger.ErrInvalidConfig) {
		t.Fatalf("MarkEffect on one connection: %v; want ErrInvalidConfig", err)
	}
}
