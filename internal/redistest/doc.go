// Package redistest gives tests a real Redis: never a mock, because the
// ledger, limiter and budget packages rely on Lua atomicity, server TIME and
// cluster slot routing that a fake would only pretend to have.
//
// Three shapes are offered:
//
//   - [Client] for ordinary tests: the Redis named by REDIS_ADDR, or else a
//     private redis-server started for the calling test. Combine it with
//     [Prefix] so tests sharing one Redis never see each other's keys; tests
//     must never FLUSHALL, because REDIS_ADDR may point at a shared server.
//   - [Start] for fault tests: a private redis-server the test owns and may
//     [Server.Kill], [Server.Stop] and [Server.Restart] on the same address.
//   - [StartCluster] for slot-routing tests: a local three-master Redis
//     Cluster built with redis-cli --cluster create.
//
// When no Redis can be had (REDIS_ADDR unset and redis-server not on PATH)
// the test is skipped with a message saying so, unless the environment
// variable named by [RequireEnv] is true, in which case it fails: CI sets
// RETRYBUDGET_REQUIRE_REDIS=1 so that a missing Redis can never turn the
// Redis-backed tests into silent skips.
//
// Every process started here belongs to one test and is killed by
// t.Cleanup. On Linux each redis-server also gets SIGKILL from the kernel if
// the test binary dies first (a -timeout panic skips cleanups), so a crashed
// run does not leave servers behind. The package keeps no global state: there
// is no process-wide server, because without a TestMain hook nothing could
// stop it, and a private redis-server starts in a few milliseconds anyway.
package redistest
