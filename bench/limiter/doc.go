// Package limiterbench compares the retrybudget limiter with
// github.com/go-redis/redis_rate/v10 and a bare PING round trip against one
// private Redis. It is a separate module so that the SDK's go.mod does not
// depend on redis_rate.
//
// Run from this directory:
//
//	LIMITER_COMPARE=1 go test -run TestCompare -v   # interleaved rounds, ~2 min
//	go test -run '^$' -bench . -benchtime 3s        # plain benchmarks
//
// Beside decisions per second, both report per decision the Redis round
// trips, the µs Redis spent running the commands sent (INFO commandstats)
// and Redis's CPU time (INFO cpu), read before and after each run. The
// Redis is always a private redis-server, whatever REDIS_ADDR says, so that
// its counters hold the contenders' work alone.
package limiterbench
