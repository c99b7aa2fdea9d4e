// Command activation is a campaign-activation service whose front door is
// guarded by the idempotency middleware, and whose call to an ad
// destination goes through a retrybudget Transport under the same business
// action, over one ledger.
//
// POST /api/v1/campaign-activations with an Idempotency-Key activates a
// campaign revision on an audience by syncing it to a fake destination
// served on loopback in the same process. A retry with the same key gets
// the stored answer; a concurrent one gets 409 with Retry-After; a reused
// key with another body gets 422; a rate-limited destination makes it
// answer 503 with Retry-After. See README.md for curl lines.
//
// Usage:
//
//	go run ./examples/activation [-addr 127.0.0.1:8080] [-redis 127.0.0.1:6379] [-slow 5s] [-retention 24h]
//
// Without -redis the ledger is in memory and forgotten at exit.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/ledger"
)

// options are the command's flags.
type options struct {
	addr      string
	redis     string
	slow      time.Duration
	retention time.Duration
}

func main() {
	var opts options
	flag.StringVar(&opts.addr, "addr", "127.0.0.1:8080", "address to listen on")
	flag.StringVar(&opts.redis, "redis", "", "Redis address for a shared ledger (host:port); empty keeps it in memory")
	flag.DurationVar(&opts.slow, "slow", 5*time.Second, "how long the destination takes to sync audience_slow")
	flag.DurationVar(&opts.retention, "retention", 0, "how long an Idempotency-Key is remembered (0: 24h)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, opts, logger); err != nil {
		fmt.Fprintln(os.Stderr, "activation:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends, then shuts down what it started.
func run(ctx context.Context, opts options, logger *slog.Logger) error {
	store, closeStore, err := openStore(ctx, opts.redis)
	if err != nil {
		return err
	}
	defer closeStore()

	hold := func(ctx context.Context) {
		t := time.NewTimer(opts.slow)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
	dmux := http.NewServeMux()
	dmux.Handle("POST /v1/audiences/{audience}/syncs", newDestination(hold, logger))
	dln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	dsrv := &http.Server{Handler: dmux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = dsrv.Serve(dln) }()
	defer dsrv.Close()

	ln, err := net.Listen("tcp", opts.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler: newApp(appConfig{store: store, destination: "http://" + dln.Addr().String(),
			retention: opts.retention, logger: logger}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	logger.Info("activation: listening", "addr", ln.Addr().String(), "destination", dln.Addr().String(), "ledger", ledgerName(opts.redis))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// openStore returns the ledger: Redis at addr, or memory when addr is
// empty, and a function that releases it.
func openStore(ctx context.Context, addr string) (ledger.Store, func(), error) {
	if addr == "" {
		return ledger.NewMemory(ledger.MemoryConfig{}), func() {}, nil
	}
	client := redis.NewClient(&redis.Options{Addr: addr})
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := client.Ping(pctx).Err(); err != nil {
		_ = client.Close()
		return nil, nil, fmt.Errorf("redis %s: %w", addr, err)
	}
	store, err := ledger.NewRedis(client, ledger.RedisConfig{Prefix: "activation:ledger:"})
	if err != nil {
		_ = client.Close()
		return nil, nil, err
	}
	return store, func() { _ = client.Close() }, nil
}

// ledgerName describes the ledger for the startup log.
func ledgerName(redisAddr string) string {
	if redisAddr == "" {
		return "memory"
	}
	return "redis " + redisAddr
}
