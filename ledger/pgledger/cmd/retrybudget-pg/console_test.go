package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/retrybudget/retrybudget/console/consolecmd"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/ledgercli"
	"github.com/retrybudget/retrybudget/ledger/ledgertest"
	"github.com/retrybudget/retrybudget/ledger/pgledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger/pgtest"
)

// TestConsoleCommandPostgres serves "retrybudget-pg console" on a real
// PostgreSQL ledger holding one uncertain action: the held list shows it
// to the operator token and to nobody else, and the command stops cleanly
// when its context ends.
func TestConsoleCommandPostgres(t *testing.T) {
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
	t.Setenv(consolecmd.TokenEnv, "pg-console-token")
	if code := run([]string{"migrate", "--url", dsn}, io.Discard, io.Discard); code != 0 {
		t.Fatalf("migrate: exit %d", code)
	}
	pool, err := pgxpool.New(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s, err := pgledger.New(pool, pgledger.Config{Config: ledger.Config{FingerprintKeys: ledgertest.FingerprintKeys()}})
	if err != nil {
		t.Fatal(err)
	}
	k := ledger.Key{Tenant: "acme", Operation: "sms.send", Key: "order-7-sms"}
	res, err := s.Reserve(t.Context(), ledger.ReserveRequest{Key: k, Fingerprint: "fp", Owner: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Fail(t.Context(), k, res.Token, ledger.Failure{EffectPossible: true, Reason: "timeout"}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- consoleCommand.Run(ctx, []string{"--url", dsn, "--addr", "127.0.0.1:0"}, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if !strings.HasPrefix(line, "retrybudget-pg console: serving on http://") {
		t.Fatalf("first line %q", line)
	}
	addr := strings.TrimSpace(line[strings.Index(line, "http://"):])
	for token, want := range map[string]int{"pg-console-token": 200, "wrong": 401} {
		req, _ := http.NewRequest("GET", addr, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		listed := strings.Count(string(body), `class="action"`)
		if resp.StatusCode != want || (want == 200) != (listed == 1) {
			t.Errorf("token %q: status %d listing %d actions, want %d (and the held action only with the token)", token, resp.StatusCode, listed, want)
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d after cancel, want 0", code)
	}
}
