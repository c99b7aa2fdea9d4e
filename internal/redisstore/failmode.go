package redisstore

// FailMode says what a Redis component decides when Redis does not answer
// in time. Each package re-exports it (limiter.FailMode, budget.FailMode)
// with its constants documented for what its fallback does.
type FailMode int

const (
	// FailOpen decides from a process-local fallback. It is the zero value.
	FailOpen FailMode = iota
	// FailClosed refuses what it cannot decide.
	FailClosed
)

// String returns "fail-open" or "fail-closed".
func (m FailMode) String() string {
	switch m {
	case FailOpen:
		return "fail-open"
	case FailClosed:
		return "fail-closed"
	}
	return "FailMode(invalid)"
}
