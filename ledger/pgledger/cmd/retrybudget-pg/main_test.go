package main

import (
	"bytes"
	"context"
	"encoding/json"
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
	base := pgtest.URL(t)
	schema := pgtest.Schema(t, base)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	dsn := u.String()
	t.Setenv(ledgercli.FingerprintKeyEnv, string(ledgertest.FingerprintKeys()[0]))
	cli := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, _, errs := cli("migrate", "--url", dsn); code != 0 {
		t.Fatalf("migrate: %d %s", code, errs)
	}
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s, err := pgledger.New(pool, pgledger.Config{Config: ledger.Config{FingerprintKeys: ledgertest.FingerprintKeys()}})
	if err != nil {
		t.Fatal(err)
	}
	k := ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-7"}
	res, err := s.Reserve(t.Context(), ledger.ReserveRequest{Key: k, Fingerprint: "fp", Owner: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Fail(t.Context(), k, res.Token, ledger.Failure{EffectPossible: true, Reason: "timeout"}); err != nil {
		t.Fatal(err)
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
	if last := shown.Attempts[len(shown.Attempts)-1]; last.Class != "reconcile" || !strings.HasPrefix(last.Owner, "operator@") || last.Token != res.Token+1 {
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
