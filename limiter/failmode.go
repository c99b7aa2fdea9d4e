package limiter

import "github.com/retrybudget/retrybudget/internal/redisstore"

// FailMode says what a [Redis] limiter does when Redis does not answer a
// decision within its timeout. It is the same type as budget.FailMode.
// String returns "fail-open" or "fail-closed".
type FailMode = redisstore.FailMode

const (
	// FailOpen decides from a process-local fallback limiter holding
	// RedisConfig.FallbackShare of every limit, so work continues at a
	// reduced, still bounded rate. Decisions carry Fallback: true. It is
	// the zero value, because the provider still enforces its own limit and
	// an outage of the coordination store should not stop payments.
	FailOpen FailMode = redisstore.FailOpen

	// FailClosed refuses to decide: Allow returns an [*UnavailableError]
	// (errors.Is(err, ErrUnavailable)), and the caller sends nothing. Use it
	// when exceeding the provider's limit costs more than not calling it,
	// for example when the provider suspends keys that exceed it.
	FailClosed FailMode = redisstore.FailClosed
)
