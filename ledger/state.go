package ledger

import "fmt"

// State is what a store knows about an action. The zero value is
// StateAbsent. An expired lease is not a State of its own: it is
// StateInProgress with a lease deadline at or before the store's clock,
// reported to Resolve as Input.LeaseExpired.
type State uint8

const (
	// StateAbsent means no live record: the action was never reserved, or
	// its record outlived its retention and was dropped.
	StateAbsent State = iota
	// StateInProgress means an owner holds a lease and may be sending.
	StateInProgress
	// StateCompleted means the owner stored the destination's response.
	StateCompleted
	// StateFailed means the last attempt failed before any effect could
	// have happened (it was refused, or never left the process), so
	// sending again is safe.
	StateFailed
	// StateUncertain means the owner gave up after the destination may
	// have acted: only a reconciler, the destination's own key handling or
	// an operator can settle it.
	StateUncertain
	// StateExpired is a record past its retention. Stores never report it,
	// because they drop expired records (Reserve sees StateAbsent); Resolve
	// accepts it so the matrix row "expired: runs as a new action" is
	// explicit for callers and for the command line.
	StateExpired
)

// String returns the state's name as ParseState accepts it.
func (s State) String() string {
	switch s {
	case StateAbsent:
		return "absent"
	case StateInProgress:
		return "in-progress"
	case StateCompleted:
		return "completed"
	case StateFailed:
		return "failed"
	case StateUncertain:
		return "uncertain"
	case StateExpired:
		return "expired"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// ParseState returns the State named s, as State.String spells it.
func ParseState(s string) (State, error) {
	for st := StateAbsent; st <= StateExpired; st++ {
		if st.String() == s {
			return st, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown state %q", ErrInvalid, s)
}
