// Command retrybudget-pg is the operator tool for a PostgreSQL action
// ledger: the retrybudget command's "ledger" and "console" subcommands,
// built in the module that carries the PostgreSQL driver so the core stays
// free of it.
//
// Usage:
//
//	retrybudget-pg ledger list    --url postgres://... [--state uncertain|in-progress|stuck]
//	retrybudget-pg ledger show    --url postgres://... --tenant T --operation O --key K
//	retrybudget-pg ledger resolve --url postgres://... --key K --completed [--status --body] | --failed
//	retrybudget-pg migrate        --url postgres://...
//	retrybudget-pg console        --url postgres://... [--addr 127.0.0.1:8080] [--read-only] [--tenants T,U]
//
// The console (see package console and docs/console.md) takes its operator
// token from RETRYBUDGET_CONSOLE_TOKEN and has the flags of
// "retrybudget console".
//
// The URL is a pgx connection string; search_path=SCHEMA and
// table=NAME (the ledger's table, default retrybudget_ledger; letters,
// digits and underscores only) may be given as query parameters. RETRYBUDGET_LEDGER_URL may replace --url.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/retrybudget/retrybudget/console/consolecmd"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/ledgercli"
	"github.com/retrybudget/retrybudget/ledger/pgledger"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: retrybudget-pg ledger <list|show|resolve> | migrate | console   (--url postgres://...)")
		return 2
	}
	switch args[0] {
	case "ledger":
		return ledgercli.Run(args[1:], stdout, stderr, open)
	case "console":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return consoleCommand.Run(ctx, args[1:], stdout, stderr)
	case "migrate":
		fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
		fs.SetOutput(stderr)
		u := fs.String("url", os.Getenv("RETRYBUDGET_LEDGER_URL"), "the database's URL")
		if err := fs.Parse(args[1:]); err != nil || *u == "" {
			fmt.Fprintln(stderr, "retrybudget-pg migrate: --url is required")
			return 2
		}
		ctx, cancel := context.WithTimeout(context.Background(), ledgercli.Timeout)
		defer cancel()
		s, closeStore, err := open(ctx, *u)
		if err != nil {
			fmt.Fprintf(stderr, "retrybudget-pg: %v\n", err)
			return 2
		}
		defer closeStore()
		if err := s.(*pgledger.Store).Migrate(ctx); err != nil {
			fmt.Fprintf(stderr, "retrybudget-pg migrate: %v\n", err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(stderr, "retrybudget-pg: unknown command %q\n", args[0])
	return 2
}

// consoleCommand is "retrybudget-pg console": the operator console on a
// PostgreSQL ledger.
var consoleCommand = consolecmd.Command{Name: "retrybudget-pg console", URL: "postgres://...", Open: open}

// open connects to the database at raw; its "table" query parameter names
// the ledger's table.
func open(ctx context.Context, raw string) (ledger.Store, func(), error) {
	raw, table, err := ledgercli.TakeParam(raw, "table")
	if err != nil {
		return nil, nil, err
	}
	cfg, err := ledgercli.Config()
	if err != nil {
		return nil, nil, err
	}
	pool, err := pgxpool.New(ctx, raw)
	if err != nil {
		// pgx quotes the connection string, password included, in some
		// parse errors: name the flag, never the value.
		return nil, nil, errors.New("--url: not a PostgreSQL connection string")
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("postgres: %w", err)
	}
	s, err := pgledger.New(pool, pgledger.Config{Table: table, Config: cfg})
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return s, pool.Close, nil
}
