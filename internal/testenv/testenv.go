// Package testenv is the one rule for tests that need an outside server
// (Redis, PostgreSQL): without one they skip, saying so loudly, unless an
// environment variable asks for the server to be there, and then they fail.
// CI sets RETRYBUDGET_REQUIRE_REDIS and RETRYBUDGET_REQUIRE_POSTGRES, so it
// never passes by skipping.
package testenv

import (
	"os"
	"strconv"
	"testing"
)

// Required reports whether the environment variable env asks for the
// server to be there: any value strconv.ParseBool reads as true.
func Required(env string) bool {
	v, err := strconv.ParseBool(os.Getenv(env))
	return err == nil && v
}

// Unavailable skips t with msg, or fails it when Required(env). It does
// not return.
func Unavailable(t testing.TB, env, msg string) {
	t.Helper()
	if Required(env) {
		t.Fatalf("%s (failing because %s=%s)", msg, env, os.Getenv(env))
	}
	t.Skip(msg)
}

// FiguresEnv is the environment variable that turns on the figure tests:
// the assertions of a throughput, a share or a latency that a quiet machine
// meets and a loaded one may not. The README's test command asserts only
// the mechanism behind each figure, with margins a loaded two-core machine
// keeps; docs/benchmarks.md gives each figure and its command.
const FiguresEnv = "RETRYBUDGET_FIGURES"

// Figures reports whether FiguresEnv asks for the figure assertions: any
// value strconv.ParseBool reads as true.
func Figures() bool { return Required(FiguresEnv) }
