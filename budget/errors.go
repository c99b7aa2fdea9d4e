package budget

import "errors"

// The Budget interface has no error results, so these never reach a caller
// of Withdraw: they are what the outage log line reports as its cause.
var (
	// errNoClient is the cause of every degraded decision of a Redis budget
	// built without a client.
	errNoClient = errors.New("budget: no Redis client")
	// errReply reports a script reply of an unexpected shape, which can
	// only come from a server that is not Redis or a mismatched script.
	errReply = errors.New("budget: unexpected script reply")
)
