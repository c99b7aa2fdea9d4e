package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/retrybudget/retrybudget/ledger"
)

func memoryOpener(s ledger.Store) func(context.Context, string) (ledger.Store, func(), error) {
	return func(context.Context, string) (ledger.Store, func(), error) { return s, func() {}, nil }
}

func TestConsoleCommandRequiresTheTokenFromTheEnvironment(t *testing.T) {
	t.Setenv(consoleTokenEnv, "")
	var stderr bytes.Buffer
	code := serveConsole(t.Context(), []string{"--url", "redis://x"}, io.Discard, &stderr, memoryOpener(ledger.NewMemory(ledger.MemoryConfig{})))
	if code != 2 || !strings.Contains(stderr.String(), consoleTokenEnv) {
		t.Errorf("exit %d, stderr %q; want 2 naming $%s", code, stderr.String(), consoleTokenEnv)
	}
}

func TestConsoleCommandServesUntilCancelled(t *testing.T) {
	t.Setenv(consoleTokenEnv, "cmd-token")
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- serveConsole(ctx, []string{"--url", "memory://", "--addr", "127.0.0.1:0"}, pw, io.Discard, memoryOpener(ledger.NewMemory(ledger.MemoryConfig{})))
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	url := strings.TrimSpace(line[strings.Index(line, "http://"):])
	for token, want := range map[string]int{"cmd-token": 200, "wrong": 401} {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("token %q: status %d, want %d", token, resp.StatusCode, want)
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d after cancel, want 0", code)
	}
}
