// Package budget is the retry budget: it bounds the retries sent to a
// destination to a fraction of its traffic, so an outage does not multiply
// the load on a provider. The Transport (package retrybudget) deposits one
// credit per first attempt and withdraws one per retry.
//
// [Budget] is the interface the Transport uses. [Local] counts one process:
// retries at most Percent of first attempts over a window, or while a
// floor of MinRetriesPerSec has a token (see [Config]). [Unlimited] turns
// the bound off. [Throttle] is adaptive client-side throttling of first
// attempts, the companion of a budget that bounds retries. [Overload]
// refuses the first attempts that a provider's queue could not answer in
// time, so that the queue drains after a spike instead of filling with
// work for callers who already left.
//
// A Local per process already bounds amplification to about 1+Percent, but
// its floor is per process: N processes hitting a dead provider send N
// times the floor's retries, and a fleet that scales out during an outage
// (as autoscalers do) scales its retries with it. A [Redis] budget counts
// every process's first attempts and retries in one place, with one atomic
// Lua script per decision, so the floor and the percentage are the fleet's.
//
//	rdb := redis.NewClient(&redis.Options{Addr: "redis:6379", ContextTimeoutEnabled: true})
//	b, err := budget.NewRedis(rdb, budget.RedisConfig{Prefix: "payments:budget:"})
//	if err != nil {
//		log.Fatal(err) // a nil client or a Prefix with a brace
//	}
//	tr := retrybudget.New(retrybudget.Config{Budget: b})
//
// Redis is a coordination store here, not a dependency of every call: when
// it is slow or down, decisions come within RedisConfig.Timeout from the
// [FailMode] in RedisConfig.OnUnavailable (by default a Local fed all along),
// marked Fallback, and sharing resumes by itself when Redis answers again.
// First attempts never wait for Redis except for one batched round trip per
// destination per RedisConfig.FlushInterval.
//
// Clients should set ContextTimeoutEnabled, so that a round trip is bounded
// by the socket deadline; otherwise each round trip waits in a separate
// goroutine to keep the bound, which costs an allocation or two more.
package budget
