package redistest

import (
	"context"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Client returns a client for a standalone Redis for tests, closed at
// t.Cleanup.
//
// The Redis is the one named by REDIS_ADDR when that is set, either as
// host:port or as a redis:// or rediss:// URL (for passwords and database
// numbers). An unreachable REDIS_ADDR fails the test rather than skipping it,
// because someone asked for that server explicitly.
//
// Otherwise it is a private redis-server started with [Start] for this test
// alone and killed at its cleanup. A per-test server costs a few
// milliseconds, needs no TestMain to shut it down and isolates tests
// completely; a process-wide one would need global state and could outlive
// the test binary.
//
// Without REDIS_ADDR or redis-server on PATH the test is skipped, or failed
// when [RequireEnv] is set.
func Client(t testing.TB) *redis.Client {
	t.Helper()
	addr := os.Getenv(addrEnv)
	if addr == "" {
		return Start(t).Client(t)
	}
	opt := &redis.Options{Addr: addr}
	if strings.Contains(addr, "://") {
		var err error
		if opt, err = redis.ParseURL(addr); err != nil {
			t.Fatalf("redistest: %s=%s: %v", addrEnv, redact(addr), stripURL(err))
		}
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("redistest: %s=%s does not answer PING: %v", addrEnv, redact(addr), err)
	}
	return c
}

// redact returns addr fit for a test log: a URL loses its password, because
// CI logs are widely readable and REDIS_ADDR may carry credentials.
func redact(addr string) string {
	if !strings.Contains(addr, "://") {
		return addr
	}
	u, err := url.Parse(addr)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// stripURL drops the URL that a *url.Error repeats in its message, for the
// same reason redact exists.
func stripURL(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err
	}
	return err
}
