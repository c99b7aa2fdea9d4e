package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/retrybudget/retrybudget/console"
	"github.com/retrybudget/retrybudget/ledger/ledgercli"
)

// consoleTokenEnv names the variable holding the console's operator
// token. It is never a flag: a flag shows in ps and shell history.
const consoleTokenEnv = "RETRYBUDGET_CONSOLE_TOKEN"

// consoleCmd runs "retrybudget console": the operator console on a Redis
// ledger until SIGINT or SIGTERM.
func consoleCmd(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serveConsole(ctx, args, stdout, stderr, openRedis)
}

// serveConsole serves the console on the store open returns until ctx
// ends, and returns the exit status: 0 after a clean stop, 1 when serving
// failed, 2 for a usage error.
func serveConsole(ctx context.Context, args []string, stdout, stderr io.Writer, open ledgercli.Opener) int {
	fs := flag.NewFlagSet("console", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", os.Getenv("RETRYBUDGET_LEDGER_URL"), "the store's URL (default $RETRYBUDGET_LEDGER_URL)")
	addr := fs.String("addr", "127.0.0.1:8080", "the address to listen on")
	readOnly := fs.Bool("read-only", false, "show held actions but refuse to settle them")
	tenants := fs.String("tenants", "", "comma-separated tenants the console shows (default all)")
	lease := fs.Duration("lease", 0, "the ledger's lease, for records without a settle time: \"not applied\" is refused until the last attempt is this old (default the ledger's default)")
	refresh := fs.Duration("refresh", 0, "reload the held list this often (default never)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s=... retrybudget console --url redis://... [--addr 127.0.0.1:8080] [flags]\n\nflags:\n", consoleTokenEnv)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	token := os.Getenv(consoleTokenEnv)
	if token == "" {
		fmt.Fprintf(stderr, "retrybudget console: $%s (the operator token) is required\n", consoleTokenEnv)
		return 2
	}
	if *url == "" {
		fmt.Fprintln(stderr, "retrybudget console: --url (or RETRYBUDGET_LEDGER_URL) is required")
		return 2
	}
	octx, cancel := context.WithTimeout(ctx, ledgercli.Timeout)
	s, closeStore, err := open(octx, *url)
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "retrybudget console: %v\n", err)
		return 2
	}
	defer closeStore()
	cfg := console.Config{Store: s, Token: token, ReadOnly: *readOnly, Lease: *lease, Refresh: *refresh}
	if *tenants != "" {
		cfg.Tenants = strings.Split(*tenants, ",")
	}
	h, err := console.New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "retrybudget console: %v\n", err)
		return 2
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "retrybudget console: %v\n", err)
		return 1
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	fmt.Fprintf(stdout, "retrybudget console: serving on http://%s/\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = srv.Shutdown(sctx)
		cancel()
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "retrybudget console: %v\n", err)
		return 1
	}
	return 0
}
