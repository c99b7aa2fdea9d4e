package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/ledgercli"
)

// ledgerCmd runs "retrybudget ledger ..." against a Redis ledger. A
// PostgreSQL ledger has its own binary, in the module that carries the
// driver: go run ./ledger/pgledger/cmd/retrybudget-pg ledger ...
func ledgerCmd(args []string, stdout, stderr io.Writer) int {
	return ledgercli.Run(args, stdout, stderr, openRedis)
}

// openRedis opens redis://[user:password@]host:port/db[?prefix=P], the
// key prefix defaulting to ledger.DefaultPrefix.
func openRedis(ctx context.Context, raw string) (ledger.Store, func(), error) {
	if strings.HasPrefix(raw, "postgres://") || strings.HasPrefix(raw, "postgresql://") {
		return nil, nil, fmt.Errorf("a PostgreSQL ledger is served by retrybudget-pg (cd ledger/pgledger && go run ./cmd/retrybudget-pg ledger)")
	}
	raw, prefix, err := ledgercli.TakeParam(raw, "prefix")
	if err != nil {
		return nil, nil, err
	}
	cfg, err := ledgercli.Config()
	if err != nil {
		return nil, nil, err
	}
	opt, err := redis.ParseURL(raw)
	if err != nil {
		return nil, nil, ledgercli.URLError(err)
	}
	c := redis.NewClient(opt)
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("redis %s: %w", opt.Addr, err)
	}
	s, err := ledger.NewRedis(c, ledger.RedisConfig{Prefix: prefix, Config: cfg})
	if err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("--url: %w", err)
	}
	return s, func() { c.Close() }, nil
}
