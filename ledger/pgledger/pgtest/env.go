package pgtest

import (
	"os"
	"strconv"
	"testing"
)

// RequireEnv is the environment variable that turns a skip (no PostgreSQL
// available) into a test failure. Any value strconv.ParseBool reads as
// true counts.
const RequireEnv = "RETRYBUDGET_REQUIRE_POSTGRES"

// URLEnv names the externally provided database that Pool prefers.
const URLEnv = "DATABASE_URL"

// unavailable skips t with msg, or fails it when RequireEnv is set. It does
// not return.
func unavailable(t testing.TB, msg string) {
	t.Helper()
	if v, err := strconv.ParseBool(os.Getenv(RequireEnv)); err == nil && v {
		t.Fatalf("%s (failing because %s=%s)", msg, RequireEnv, os.Getenv(RequireEnv))
	}
	t.Skip(msg)
}
