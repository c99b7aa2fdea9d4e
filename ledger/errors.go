package ledger

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

var (
	// ErrInvalid reports a request a store cannot act on, such as an empty
	// action key or a negative lease.
	ErrInvalid = errors.New("ledger: invalid request")
	// ErrInvalidConfig is wrapped by a constructor's error for a
	// configuration that cannot work, such as a nil Redis client.
	ErrInvalidConfig = errors.New("ledger: invalid config")
	// ErrConflict reports an action key reused for a different request.
	ErrConflict = errors.New("ledger: action key reused for a different request")
	// ErrPending reports an action another owner is sending right now.
	ErrPending = errors.New("ledger: action in progress")
	// ErrDelayed reports an action held back because its destination is
	// rate limited. Its record is untouched.
	ErrDelayed = errors.New("ledger: action delayed by a rate-limited destination")
	// ErrUncertain reports an action the destination may have performed,
	// which only a reconciler or an operator can settle.
	ErrUncertain = errors.New("ledger: action outcome uncertain")
	// ErrNotOwner reports a fencing token that is no longer current: another
	// owner took the action over, or it is no longer in progress.
	ErrNotOwner = errors.New("ledger: not the action's owner")
	// ErrOwnerShared reports that an owner lost its action to another live
	// process reserving under the same ReserveRequest.Owner with another
	// Instance: two processes were given one owner name, and each takes
	// the other's actions over as if it had restarted. Fencing keeps each
	// action to one sender; the name must still be made unique. It wraps
	// ErrNotOwner, so errors.Is(err, ErrNotOwner) holds too.
	ErrOwnerShared = fmt.Errorf("%w: taken over by another live process under the same owner name", ErrNotOwner)
	// ErrNotFound reports that a store holds no live record for an action.
	ErrNotFound = errors.New("ledger: no record for action")
	// ErrFull reports a Memory store at its MaxRecords or MaxBytes: the
	// action was not reserved, and nothing was evicted to make room,
	// since forgetting a record in progress or completed could let its
	// effect happen twice. Try again later.
	ErrFull = errors.New("ledger: store full")
	// ErrTenantFull reports a tenant at its quota in a Memory store
	// (MemoryConfig.TenantMaxRecords, TenantMaxBytes) or a Redis store
	// (RedisConfig.TenantMaxRecords). It wraps
	// ErrFull, so errors.Is(err, ErrFull) holds too.
	ErrTenantFull = fmt.Errorf("%w: tenant quota reached", ErrFull)
	// ErrBusy reports a store at its bound of open atomic transactions
	// (see Atomic): nothing was done, and a later try may find room. It
	// is not an outage: the store answered.
	ErrBusy = errors.New("ledger: too many actions in their transaction")
	// ErrNoFingerprintKey reports a store shared between processes
	// configured without Config.FingerprintKeys: it would keep request
	// fingerprints that its readers could reverse by guessing.
	ErrNoFingerprintKey = fmt.Errorf("%w: no fingerprint key for a shared store", ErrInvalidConfig)
	// ErrCorrupt reports a stored record the package cannot read, or a
	// Redis script whose verdict disagrees with Resolve.
	ErrCorrupt = errors.New("ledger: corrupt record")
)

// Error is returned by Reservation.Err for an action that must not be sent
// now, and by a Memory store's Reserve for one it has no room to record.
// It unwraps to ErrConflict, ErrPending, ErrDelayed, ErrUncertain, ErrFull
// or ErrTenantFull and carries what the caller needs to act on it. Its message names the action
// only by the start of Key.ID, never by its raw key.
type Error struct {
	// Err is the sentinel: ErrConflict, ErrPending, ErrDelayed or
	// ErrUncertain.
	Err error
	// Key is the action.
	Key Key
	// Verdict is the decision that produced the error.
	Verdict Verdict
	// State is the stored state the decision was made on.
	State State
	// RetryAfter is, for ErrPending, how long the current owner's lease
	// still runs; for ErrFull and ErrTenantFull, how long until a record
	// could be dropped to make room (zero when the store cannot tell).
	// Zero otherwise.
	RetryAfter time.Duration
	// Path is the decision path in words (see Decision.Path).
	Path []string
}

// Error returns the sentinel's text with the stored state. It does not
// name the action: Key.ID is an unkeyed hash of the tenant, operation and
// key, which a reader of a log line could test guesses against; e.Key
// names it for a caller that asks.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Err.Error())
	fmt.Fprintf(&b, " (stored state %s", e.State)
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, ", retry after %s", e.RetryAfter)
	}
	b.WriteString(")")
	return b.String()
}

// Unwrap returns Err, so errors.Is(err, ErrPending) and friends work.
func (e *Error) Unwrap() error { return e.Err }

// notOwner returns ErrNotOwner for k. The text does not name the action
// (see Error.Error).
func notOwner(Key) error {
	return ErrNotOwner
}
