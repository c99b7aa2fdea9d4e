package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestRedisFlagTakesURLs pins that -redis takes redis:// and rediss://
// URLs, not only host:port, so a Redis with a password or TLS can be used,
// and that the startup log never shows the password.
func TestRedisFlagTakesURLs(t *testing.T) {
	o, err := redisOptions("rediss://user:s3cret@redis.internal:6380/2")
	if err != nil || o.Addr != "redis.internal:6380" || o.Username != "user" || o.Password != "s3cret" || o.DB != 2 || o.TLSConfig == nil {
		t.Fatalf("rediss URL: %+v, %v", o, err)
	}
	if o, err := redisOptions("127.0.0.1:6379"); err != nil || o.Addr != "127.0.0.1:6379" || o.TLSConfig != nil {
		t.Fatalf("host:port: %+v, %v", o, err)
	}
	if _, err := redisOptions("redis://:s3cret@host:notaport/x"); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("bad URL: %v; want an error without the password", err)
	}
	if name := ledgerName("rediss://user:s3cret@redis.internal:6380/2"); strings.Contains(name, "s3cret") {
		t.Errorf("ledgerName shows the password: %s", name)
	}
}
