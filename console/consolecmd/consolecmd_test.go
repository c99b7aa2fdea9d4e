package consolecmd

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

// memoryCommand is a console command whose store is s, whatever the URL.
func memoryCommand(s ledger.Store) Command {
	return Command{Name: "test console", Open: func(context.Context, string) (ledger.Store, func(), error) { return s, func() {}, nil }}
}

func TestCommandRequiresTheTokenFromTheEnvironment(t *testing.T) {
	t.Setenv(TokenEnv, "")
	var stderr bytes.Buffer
	code := memoryCommand(ledger.NewMemory(ledger.MemoryConfig{})).Run(t.Context(), []string{"--url", "redis://x"}, io.Discard, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), TokenEnv) {
		t.Errorf("exit %d, stderr %q; want 2 naming $%s", code, stderr.String(), TokenEnv)
	}
}

func TestCommandServesUntilCancelled(t *testing.T) {
	t.Setenv(TokenEnv, "cmd-token")
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- memoryCommand(ledger.NewMemory(ledger.MemoryConfig{})).Run(ctx, []string{"--url", "memory://", "--addr", "127.0.0.1:0"}, pw, io.Discard)
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
