package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// setupTimeout bounds each setup and cleanup statement.
const setupTimeout = 30 * time.Second

// Pool returns a pool on DATABASE_URL, or else on a private server started
// for t, whose every connection has search_path set to a fresh schema
// (see Schema). The pool is closed and the schema dropped by t.Cleanup.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return PoolOn(t, URL(t))
}

// PoolOn is Pool on the database at url.
func PoolOn(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	schema := Schema(t, url)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(pool.Close) // before the schema's drop: cleanups run last first
	return pool
}

// Schema creates a schema with a fresh name derived from t's name in the
// database at url, registers its DROP ... CASCADE with t.Cleanup, and
// returns its name.
func Schema(t testing.TB, url string) string {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "t_" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return '_'
	}, t.Name())
	name = name[:min(len(name), 50)] + "_" + hex.EncodeToString(b[:])
	exec := func(sql string) error {
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	id := pgx.Identifier{name}.Sanitize()
	if err := exec("CREATE SCHEMA " + id); err != nil {
		t.Fatalf("pgtest: create schema: %v", err)
	}
	t.Cleanup(func() {
		if err := exec("DROP SCHEMA " + id + " CASCADE"); err != nil {
			t.Errorf("pgtest: drop schema %s: %v", name, err)
		}
	})
	return name
}

// URL returns DATABASE_URL, or else the URL of a private server started
// for t (see Start).
func URL(t testing.TB) string {
	t.Helper()
	if url := os.Getenv(URLEnv); url != "" {
		return url
	}
	return Start(t).URL
}

// PoolVia returns a pool on schema of the database at url, connecting to
// addr ("host:port", such as a CutProxy's) instead of url's host when addr
// is set, in plain text so that a proxy sees COMMIT. t.Cleanup closes it.
func PoolVia(t testing.TB, url, schema, addr string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	if addr != "" {
		host, port, err := net.SplitHostPort(addr)
		p, perr := strconv.Atoi(port)
		if err != nil || perr != nil {
			t.Fatalf("pgtest: address %q is not host:port", addr)
		}
		cfg.ConnConfig.Host, cfg.ConnConfig.Port = host, uint16(p)
		// No TLS, and no fallback that would bypass the proxy.
		cfg.ConnConfig.TLSConfig, cfg.ConnConfig.Fallbacks = nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}
