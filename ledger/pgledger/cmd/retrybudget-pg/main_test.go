package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/ledgercli"
	"github.com/retrybudget/retrybudget/ledger/ledgertest"
	"github.com/retrybudget/retrybudget/ledger/pgledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger/pgtest"
)

// TestLedgerCommandPostgres drives migrate, list, show and resolve
// against a real PostgreSQL: an uncertain action is listed, resolved as
// failed by an operator with a fresh fencing token, and then runs again.
func TestLedgerCommandPostgres(t *testing.T) {
	k := ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-7"}
	dsn, s, token := uncertainAction(t, k)
	cli := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		return code, out.String(), errb.String()
	}

	code, out, errs := cli("ledger", "list", "--url", dsn, "--state", "uncertain")
	var listed []ledger.Record
	if code != 0 || json.Unmarshal([]byte(out), &listed) != nil || len(listed) != 1 || listed[0].Key != k {
		t.Fatalf("list: %d %s %s", code, out, errs)
	}
	if code, out, errs := cli("ledger", "resolve", "--url", dsn, "--tenant", "acme", "--operation", "charge", "--key", "order-7", "--failed", "--reason", "provider has no such charge"); code != 0 {
		t.Fatalf("resolve: %d %s %s", code, out, errs)
	}
	code, out, _ = cli("ledger", "show", "--url", dsn, "--tenant", "acme", "--operation", "charge", "--key", "order-7")
	var shown ledger.Record
	if code != 0 || json.Unmarshal([]byte(out), &shown) != nil || shown.State != ledger.StateFailed || shown.Reason != "provider has no such charge" {
		t.Fatalf("show: %d %s", code, out)
	}
	if last := shown.Attempts[len(shown.Attempts)-1]; last.Class != "reconcile" || !strings.HasPrefix(last.Owner, "operator@") || last.Token != token+1 {
		t.Fatalf("the operator did not act as a fenced owner: %+v", last)
	}
	again, err := s.Reserve(t.Context(), ledger.ReserveRequest{Key: k, Fingerprint: "fp"})
	if err != nil || again.Verdict != ledger.VerdictRetry {
		t.Fatalf("after resolve --failed: %s, %v", again.Verdict, err)
	}
}

// A connection string that does not parse is reported without itself: it
// may hold the database password.
func TestLedgerCommandNeverPrintsTheURL(t *testing.T) {
	t.Setenv(ledgercli.FingerprintKeyEnv, string(ledgertest.FingerprintKeys()[0]))
	const password = "s3cretPassw0rd"
	for _, raw := range []string{
		"postgres://user:" + password + "@ho st/db?table=t", // url.Parse refuses it (the table parameter)
		"postgres://user:" + password + "@host:notaport/db", // pgx refuses it
	} {
		var out, errb bytes.Buffer
		if code := run([]string{"ledger", "list", "--url", raw}, &out, &errb); code == 0 {
			t.Fatalf("list with %q succeeded", raw)
		}
		if strings.Contains(errb.String()+out.String(), password) {
			t.Fatalf("the error for %q prints the password: %s", raw, errb.String())
		}
	}
}

// uncertainAction migrates a fresh schema of a real PostgreSQL through the
// command, and leaves action k in it uncertain, as a worker whose answer
// was lost does. It returns the schema's connection string, a store on
// it, and the fencing token k was reserved with.
func uncertainAction(t *testing.T, k ledger.Key) (dsn string, s *pgledger.Store, token int64) {
	t.Helper()
	base := pgtest.URL(t)
	schema := pgtest.Schema(t, base)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	dsn = u.String()
	t.Setenv(ledgercli.FingerprintKeyEnv, string(ledgertest.FingerprintKeys()[0]))
	var errb bytes.Buffer
	if code := run([]string{"migrate", "--url", dsn}, io.Discard, &errb); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, errb.String())
	}
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s, err = pgledger.New(pool, pgledger.Config{Config: ledger.Config{FingerprintKeys: ledgertest.FingerprintKeys()}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Reserve(t.Context(), ledger.ReserveRequest{Key: k, Fingerprint: "fp", Owner: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Fail(t.Context(), k, res.Token, ledger.Failure{EffectPossible: true, Reason: "timeout"}); err != nil {
		t.Fatal(err)
	}
	return dsn, s, res.Token
}
