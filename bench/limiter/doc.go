// Package limiterbench compares the retrybudget limiter with
// github.com/go-redis/redis_rate/v10 and a bare PING round trip against one
// Redis. It is a separate module so that the SDK's go.mod does not depend
// on redis_rate.
//
// Run from this directory:
//
//	go test -run '^$' -bench . -benchtime 3s
//
// Redis is REDIS_ADDR when set, else a private redis-server.
package limiterbench
