package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/retrybudget/retrybudget/console/consolecmd"
)

// consoleCmd runs "retrybudget console": the operator console on a Redis
// ledger until SIGINT or SIGTERM.
func consoleCmd(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := consolecmd.Command{Name: "retrybudget console", URL: "redis://...", Open: openRedis}
	return c.Run(ctx, args, stdout, stderr)
}
