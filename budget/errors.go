package budget

import (
	"errors"
	"fmt"
)

// ErrInvalidConfig is the sentinel wrapped by NewRedis's error for a
// configuration that cannot work: a nil client, or a Prefix with '{' or
// '}'.
var ErrInvalidConfig = errors.New("budget: invalid config")

// errReply reports a script reply of an unexpected shape, which can only
// come from a server that is not Redis or a mismatched script. The Budget
// interface has no error results, so it never reaches a caller of
// Withdraw: it is what the outage log line reports as its cause.
var errReply = errors.New("budget: unexpected script reply")

// ErrNoDestinationKey is NewRedis's error for a RedisConfig without a
// DestinationKey. It wraps ErrInvalidConfig.
var ErrNoDestinationKey = fmt.Errorf("%w: no DestinationKey for a shared budget", ErrInvalidConfig)
