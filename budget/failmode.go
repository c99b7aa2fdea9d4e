package budget

import "github.com/retrybudget/retrybudget/internal/redisstore"

// FailMode says what a [Redis] budget decides when Redis does not answer
// within RedisConfig.Timeout. Either way the decision carries Fallback:
// true, so an Observer can count them. It is the same type as
// limiter.FailMode. String returns "fail-open" or "fail-closed".
type FailMode = redisstore.FailMode

const (
	// FailOpen decides from a [Local] with the same rule, fed with this
	// process's deposits all along, so retries continue at the rate one
	// process alone would allow. It is the zero value: the local rule still
	// bounds amplification, only the floor is no longer shared (each
	// process has its own), and an outage of the coordination store should
	// not turn every transient failure into a failed payment.
	FailOpen FailMode = redisstore.FailOpen
	// FailClosed refuses every retry while Redis is unavailable; first
	// attempts still go out, since a Budget never refuses them. Use it when
	// a provider must never see more than the shared budget allows.
	FailClosed FailMode = redisstore.FailClosed
)
