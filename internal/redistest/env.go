package redistest

import (
	"fmt"
	"os/exec"
	"testing"

	"github.com/retrybudget/retrybudget/internal/testenv"
)

// RequireEnv is the environment variable that turns a skip (no Redis
// available) into a test failure. CI sets RETRYBUDGET_REQUIRE_REDIS=1. Any
// value strconv.ParseBool reads as true counts; anything else means skip.
const RequireEnv = "RETRYBUDGET_REQUIRE_REDIS"

// addrEnv names the externally provided Redis that Client prefers.
const addrEnv = "REDIS_ADDR"

// noRedis is the message for a missing redis-server; it names both ways out.
const noRedis = "redistest: no Redis: set REDIS_ADDR or install redis-server"

// lookBinary returns the path of the named executable, or skips or fails t
// as testenv.Unavailable does when it is not on PATH.
func lookBinary(t testing.TB, name, msg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		testenv.Unavailable(t, RequireEnv, fmt.Sprintf("%s (%v)", msg, err))
	}
	return path
}
