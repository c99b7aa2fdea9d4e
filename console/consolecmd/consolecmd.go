// Package consolecmd is the "console" subcommand of the operator commands,
// "retrybudget console" (Redis) and "retrybudget-pg console" (PostgreSQL):
// its flags, the operator token from the environment, and serving the
// console (package console) on the store until the context ends. Each
// command brings the Opener for its store, so a command compiles only its
// own store's driver.
package consolecmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/retrybudget/retrybudget/console"
	"github.com/retrybudget/retrybudget/ledger/ledgercli"
)

// TokenEnv names the variable holding the console's operator token. It is
// never a flag: a flag shows in ps and shell history.
const TokenEnv = "RETRYBUDGET_CONSOLE_TOKEN"

// Command is one command's console subcommand.
type Command struct {
	// Name names the command in messages and usage, such as
	// "retrybudget console".
	Name string
	// URL is an example of the store's URL for the usage line, such as
	// "redis://host:6379/0?prefix=rb:". Empty means "URL".
	URL string
	// Open opens the store the --url flag names. Required.
	Open ledgercli.Opener
}

// Run serves the console on the store c.Open returns until ctx ends, and
// returns the exit status: 0 after a clean stop (or for -help), 1 when
// serving failed, 2 for a usage error (a missing token or URL, a store
// that does not open).
func (c Command) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", os.Getenv("RETRYBUDGET_LEDGER_URL"), "the store's URL (default $RETRYBUDGET_LEDGER_URL)")
	addr := fs.String("addr", "127.0.0.1:8080", "the address to listen on")
	readOnly := fs.Bool("read-only", false, "show held actions but refuse to settle them")
	tenants := fs.String("tenants", "", "comma-separated tenants the console shows (default all)")
	lease := fs.Duration("lease", 0, "the ledger's lease, for records without a settle time: \"not applied\" asks for a confirmation until the last attempt is this old (default the ledger's default)")
	refresh := fs.Duration("refresh", 0, "reload the held list this often (default never)")
	example := c.URL
	if example == "" {
		example = "URL"
	}
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s=... %s --url %s [--addr 127.0.0.1:8080] [flags]\n\nflags:\n", TokenEnv, c.Name, example)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	token := os.Getenv(TokenEnv)
	if token == "" {
		fmt.Fprintf(stderr, "%s: $%s (the operator token) is required\n", c.Name, TokenEnv)
		return 2
	}
	if *url == "" {
		fmt.Fprintf(stderr, "%s: --url (or RETRYBUDGET_LEDGER_URL) is required\n", c.Name)
		return 2
	}
	octx, cancel := context.WithTimeout(ctx, ledgercli.Timeout)
	s, closeStore, err := c.Open(octx, *url)
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.Name, err)
		return 2
	}
	defer closeStore()
	cfg := console.Config{Store: s, Token: token, ReadOnly: *readOnly, Lease: *lease, Refresh: *refresh}
	if *tenants != "" {
		cfg.Tenants = strings.Split(*tenants, ",")
	}
	h, err := console.New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.Name, err)
		return 2
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.Name, err)
		return 1
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	fmt.Fprintf(stdout, "%s: serving on http://%s/\n", c.Name, ln.Addr())
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
		fmt.Fprintf(stderr, "%s: %v\n", c.Name, err)
		return 1
	}
	return 0
}
