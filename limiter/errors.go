package limiter

import (
	"errors"
	"fmt"
)

// ErrUnavailable is the sentinel for a limiter that could not reach its
// shared store (Redis) within the decision timeout and is configured to
// fail closed. Test for it with errors.Is; the concrete error is an
// [*UnavailableError].
var ErrUnavailable = errors.New("limiter: store unavailable")

// ErrInvalidConfig is the sentinel wrapped by constructor errors for a
// configuration that cannot work, such as a limit with a zero Rate.
var ErrInvalidConfig = errors.New("limiter: invalid config")

// ErrNoBoundaryKey reports a [Redis] limiter configured without
// RedisConfig.BoundaryKey: its store, shared by the fleet, would name
// boundaries by hashes that anyone able to list its keys could match
// against guessed credentials. It wraps [ErrInvalidConfig].
var ErrNoBoundaryKey = fmt.Errorf("%w: no BoundaryKey for a shared store", ErrInvalidConfig)

// UnavailableError reports a decision or cooldown that the shared store
// could not serve. It matches [ErrUnavailable] with errors.Is and unwraps
// to the store's error.
type UnavailableError struct {
	// Op is the operation that failed: "allow", "cooldown" or "prepare".
	Op string
	// Err is the store's error, such as a timeout or a refused connection.
	Err error
}

// Error returns "limiter: store unavailable: allow: <cause>".
func (e *UnavailableError) Error() string {
	return ErrUnavailable.Error() + ": " + e.Op + ": " + e.Err.Error()
}

// Unwrap returns the store's error.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Is reports whether target is ErrUnavailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }
