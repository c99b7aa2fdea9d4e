package pgtest

// RequireEnv is the environment variable that turns a skip (no PostgreSQL
// available) into a test failure (see internal/testenv). Any value
// strconv.ParseBool reads as true counts.
const RequireEnv = "RETRYBUDGET_REQUIRE_POSTGRES"

// URLEnv names the externally provided database that Pool prefers.
const URLEnv = "DATABASE_URL"
