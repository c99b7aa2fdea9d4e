// Package budget shares a retry budget through Redis, so that the rule of
// [retrybudget.LocalBudget] (retries at most Percent of first attempts over
// a window, or while a floor of MinRetriesPerSec has a token) holds for a whole fleet of
// processes calling the same provider, not for each process alone.
//
// A LocalBudget per process already bounds amplification to about
// 1+Percent, but its floor is per process: N processes hitting a dead
// provider send N times the floor's retries, and a fleet that scales out
// during an outage (as autoscalers do) scales its retries with it. A
// [Redis] budget counts every process's first attempts and retries in one
// place, with one atomic Lua script per decision, so the floor and the
// percentage are the fleet's.
//
//	rdb := redis.NewClient(&redis.Options{Addr: "redis:6379", ContextTimeoutEnabled: true})
//	tr := retrybudget.New(retrybudget.Config{
//		Budget: budget.NewRedis(rdb, budget.RedisConfig{Prefix: "payments:budget:"}),
//	})
//
// Redis is a coordination store here, not a dependency of every call: when
// it is slow or down, decisions come within RedisConfig.Timeout from the
// [Policy] in RedisConfig.OnUnavailable (by default a LocalBudget fed all
// along), marked Degraded, and sharing resumes by itself when Redis
// answers again. First attempts never wait for Redis except for one
// batched round trip per destination per RedisConfig.FlushInterval.
//
// Clients should set ContextTimeoutEnabled, so that a round trip is bounded
// by the socket deadline; otherwise each round trip waits in a separate
// goroutine to keep the bound, which costs an allocation or two more.
package budget
