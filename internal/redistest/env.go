package redistest

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// RequireEnv is the environment variable that turns a skip (no Redis
// available) into a test failure. CI sets RETRYBUDGET_REQUIRE_REDIS=1. Any
// value strconv.ParseBool reads as true counts; anything else means skip.
const RequireEnv = "RETRYBUDGET_REQUIRE_REDIS"

// addrEnv names the externally provided Redis that Client prefers.
const addrEnv = "REDIS_ADDR"

// noRedis is the message for a missing redis-server; it names both ways out.
const noRedis = "redistest: no Redis: set REDIS_ADDR or install redis-server"

// required reports whether RequireEnv asks for missing Redis to fail tests.
func required() bool {
	v, err := strconv.ParseBool(os.Getenv(RequireEnv))
	return err == nil && v
}

// unavailable skips t with msg, or fails it when RequireEnv is set. It does
// not return.
func unavailable(t testing.TB, msg string) {
	t.Helper()
	if required() {
		t.Fatalf("%s (failing because %s=%s)", msg, RequireEnv, os.Getenv(RequireEnv))
	}
	t.Skip(msg)
}

// lookBinary returns the path of the named executable, or skips or fails t
// as unavailable does when it is not on PATH.
func lookBinary(t testing.TB, name, msg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		unavailable(t, fmt.Sprintf("%s (%v)", msg, err))
	}
	return path
}
