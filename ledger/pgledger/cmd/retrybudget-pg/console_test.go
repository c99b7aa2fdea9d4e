package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/retrybudget/retrybudget/console/consolecmd"
	"github.com/retrybudget/retrybudget/ledger"
)

// TestConsoleCommandPostgres serves "retrybudget-pg console" on a real
// PostgreSQL ledger holding one uncertain action: the held list shows it
// to the operator token and to nobody else, and the command stops cleanly
// when its context ends.
func TestConsoleCommandPostgres(t *testing.T) {
	dsn, _, _ := uncertainAction(t, ledger.Key{Tenant: "acme", Operation: "sms.send", Key: "order-7-sms"})
	t.Setenv(consolecmd.TokenEnv, "pg-console-token")

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
