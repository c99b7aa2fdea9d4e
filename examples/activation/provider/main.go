// Command provider is the fake destination of examples/activation as a
// process of its own: a provider that deduplicates syncs by
// Idempotency-Key, shared by every instance of the service, so that its
// effects are counted in one place.
//
// Usage:
//
//	go run ./examples/activation/provider [-addr 127.0.0.1:9090] [-slow 5s]
//
// POST /v1/audiences/{audience}/syncs makes a sync (one per
// Idempotency-Key; a repeated key gets the first sync back); GET /v1/stats
// answers {"requests":N,"syncs":M}, M being the effects.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/retrybudget/retrybudget/examples/activation/app"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9090", "address to listen on")
	slow := flag.Duration("slow", 5*time.Second, "how long a sync of audience_slow takes")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ln, err := net.Listen("tcp", *addr)
	if err == nil {
		logger.Info("provider: listening", "addr", ln.Addr().String())
		err = app.ServeOn(ctx, ln, app.NewDestination(app.HoldFor(*slow), logger).Handler(), nil)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "provider:", err)
		os.Exit(1)
	}
}
