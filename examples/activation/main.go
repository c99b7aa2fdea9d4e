// Command activation is a campaign-activation service whose front door is
// guarded by the idempotency middleware, and whose call to an ad
// destination goes through a retrybudget Transport under the same business
// action, over one ledger. The service itself is package app; this command
// runs it with a ledger in memory or in Redis, and examples/activation/pg
// (a module of its own) with PostgreSQL.
//
// POST /api/v1/campaign-activations with an Idempotency-Key activates a
// campaign revision on an audience by syncing it to a fake destination:
// one served on loopback in the same process, or with -destination the
// provider process of examples/activation/provider, shared by every
// instance. A retry with the same key gets the stored answer; a concurrent
// one gets 409 with Retry-After; a reused key with another body gets 422;
// a rate-limited destination makes it answer 503 with Retry-After. See
// README.md for curl lines.
//
// Usage:
//
//	go run ./examples/activation [-addr 127.0.0.1:8080] [-redis rediss://:password@host:6380/0] [-destination http://127.0.0.1:9090] [-slow 5s] [-retention 24h]
//
// Without -redis the ledger and the activations are in memory and
// forgotten at exit. With it, both are in Redis, shared by every instance,
// and ACTIVATION_FINGERPRINT_KEY must hold the deployment's fingerprint
// key. The bearer tokens it accepts (token_a, token_b) are hard-coded for
// the demo only: a real service verifies credentials.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/examples/activation/app"
	"github.com/retrybudget/retrybudget/ledger"
)

// options are the command's flags.
type options struct {
	addr        string
	redis       string
	destination string
	slow        time.Duration
	retention   time.Duration
}

func main() {
	var opts options
	flag.StringVar(&opts.addr, "addr", "127.0.0.1:8080", "address to listen on")
	flag.StringVar(&opts.redis, "redis", "", "Redis for a shared ledger: redis://[user:password@]host:port[/db], rediss:// for TLS, or host:port; empty keeps it in memory")
	flag.StringVar(&opts.destination, "destination", "", "base URL of the destination (go run ./examples/activation/provider); empty starts one on loopback in this process")
	flag.DurationVar(&opts.slow, "slow", 5*time.Second, "how long the embedded destination takes to sync audience_slow")
	flag.DurationVar(&opts.retention, "retention", 0, "how long an Idempotency-Key is remembered (0: 24h); a key lives at least until one lease past its last lease's end, whichever is later")
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
	store, activations, closeStore, err := openStore(ctx, opts.redis)
	if err != nil {
		return err
	}
	defer closeStore()
	return app.Serve(ctx, app.ServeConfig{
		Addr: opts.addr,
		App: app.Config{Store: store, Activations: activations, Destination: opts.destination,
			Retention: opts.retention, Logger: logger},
		Slow:   opts.slow,
		Ledger: ledgerName(opts.redis),
	})
}

// fingerprintKeyEnv names the environment variable holding the ledger's
// fingerprint key (ledger.FingerprintKeys), required with -redis.
const fingerprintKeyEnv = "ACTIVATION_FINGERPRINT_KEY"

// openStore returns the ledger and the activations: in Redis at addr, or
// in memory when addr is empty, and a function that releases them.
func openStore(ctx context.Context, addr string) (ledger.Store, app.Activations, func(), error) {
	if addr == "" {
		return ledger.NewMemory(ledger.MemoryConfig{}), app.NewMemoryActivations(), func() {}, nil
	}
	if strings.HasPrefix(addr, "postgres://") || strings.HasPrefix(addr, "postgresql://") {
		return nil, nil, nil, errors.New("-redis: a PostgreSQL URL; the PostgreSQL variant is a module of its own: cd examples/activation/pg && go run . -postgres URL")
	}
	// The fingerprint key is a deployment secret, the same on every
	// instance: records in Redis are readable by whoever reads Redis.
	key := os.Getenv(fingerprintKeyEnv)
	if key == "" {
		return nil, nil, nil, fmt.Errorf("a Redis ledger needs a fingerprint key: set %s to a secret of at least 16 bytes", fingerprintKeyEnv)
	}
	ropts, err := redisOptions(addr)
	if err != nil {
		return nil, nil, nil, err
	}
	client := redis.NewClient(ropts)
	store, err := ledger.NewRedis(client, ledger.RedisConfig{Prefix: "activation:ledger:",
		Config: ledger.Config{FingerprintKeys: ledger.FingerprintKeys{[]byte(key)}}})
	if err != nil {
		_ = client.Close()
		return nil, nil, nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := client.Ping(pctx).Err(); err != nil {
		_ = client.Close()
		return nil, nil, nil, fmt.Errorf("redis %s: %w", ledgerName(addr), err)
	}
	return store, app.NewRedisActivations(client, "activation:activations:"), func() { _ = client.Close() }, nil
}

// redisOptions reads the -redis flag: a redis:// or rediss:// (TLS) URL,
// which may carry a user, a password and a database number
// (redis.ParseURL), or a bare host:port.
func redisOptions(v string) (*redis.Options, error) {
	if !strings.Contains(v, "://") {
		return &redis.Options{Addr: v}, nil
	}
	o, err := redis.ParseURL(v)
	if err != nil {
		// ParseURL's error may quote the URL, password included.
		return nil, fmt.Errorf("-redis: not a redis:// or rediss:// URL (%s)", ledgerName(v))
	}
	return o, nil
}

// ledgerName describes the ledger for the startup log, never with the
// password a Redis URL may carry.
func ledgerName(redisAddr string) string {
	if redisAddr == "" {
		return "memory"
	}
	if u, err := url.Parse(redisAddr); err == nil && u.Scheme != "" {
		return "redis " + u.Redacted()
	}
	if strings.Contains(redisAddr, "://") {
		return "redis (unparsable URL)"
	}
	return "redis " + redisAddr
}
