// Package pgtest gives tests a real PostgreSQL, never a fake, for the
// PostgreSQL ledger store and for any other module of the repository that
// needs one (a River integration, the examples).
//
// Two shapes are offered:
//
//   - [Pool] for ordinary tests: a pgx pool on the database named by
//     DATABASE_URL, or else on a private server started for the test,
//     whose connections all use a fresh schema created for the test and
//     dropped after it. Tests sharing one database never see each other's
//     tables.
//   - [Start] for fault tests: a private server (initdb, then postgres, on
//     a free loopback port in a temporary directory) that the test owns and
//     may [Server.Kill] with SIGKILL and [Server.Restart] on the same port.
//     DATABASE_URL is ignored: a fault test must own the process it kills.
//
// When no PostgreSQL can be had (DATABASE_URL unset and no initdb on PATH
// or under /usr/lib/postgresql/*/bin) the test is skipped with a message
// saying so, unless the environment variable named by [RequireEnv] is true,
// in which case it fails: CI sets RETRYBUDGET_REQUIRE_POSTGRES=1.
//
// PostgreSQL refuses to run as root; when the tests run as root the
// private server runs as the "postgres" user, which the Debian package
// creates.
package pgtest
