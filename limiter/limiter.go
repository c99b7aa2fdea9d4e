package limiter

import (
	"context"
	"time"
)

// Limiter decides whether one request to a provider may be sent now.
//
// Implementations must be safe for concurrent use. Being limited is data,
// reported in the [Decision]; an error means the limiter itself could not
// decide (for example Redis is unreachable and the policy is to fail
// closed), never that the boundary is busy.
type Limiter interface {
	// Allow takes one token from every limit of r's boundary (and of its
	// owner's share, when fairness is configured) if all of them have one,
	// and takes nothing otherwise.
	Allow(ctx context.Context, r Request) (Decision, error)

	// Cooldown pauses the whole boundary until the given time, for every
	// caller that shares it, and every boundary within it (see [Within]).
	// A later Cooldown only ever extends the pause. The Transport calls it
	// when the provider answers 429 or 503 with Retry-After, and with the
	// boundary's [Scope] for a limit the provider keeps across the scope.
	Cooldown(ctx context.Context, boundary string, until time.Time) error
}

// Request identifies one decision.
type Request struct {
	// Boundary is the provider account, app or credential whose limit the
	// request counts against, as returned by a [Boundary] function: already
	// hashed or otherwise safe to store. Implementations hash it again
	// before using it in a Redis key. The empty string is one boundary like
	// any other.
	Boundary string

	// Owner optionally names the tenant the request is made for. When the
	// limiter has an owner share configured, each owner is additionally
	// held to that share of the boundary's limits, so one tenant's backlog
	// cannot starve the others. Empty means no owner: only the boundary's
	// limits apply.
	Owner string
}

// Decision is the outcome of one Allow call.
type Decision struct {
	// Allowed reports whether the request may be sent now. When true, one
	// token was taken from every limit that applies.
	Allowed bool

	// RetryAfter is how long to wait before asking again; 0 when allowed.
	// It is a lower bound: other callers may take the token first.
	RetryAfter time.Duration

	// CooldownUntil is the end of the boundary's pause, in the caller's
	// clock, when the boundary is paused by a cooldown, its own or its
	// scope's (see [Within]), whichever ends later; the zero time
	// otherwise.
	CooldownUntil time.Time

	// Reason says which check refused the request; empty when allowed.
	Reason Reason

	// Fallback reports that the decision came from the process-local
	// fallback because the shared store was unavailable (see [FailOpen]).
	Fallback bool

	// QueueDepth is, with a [FairQueue], the owner's requests in the
	// boundary's queue when decided: the slots it holds across the fleet
	// plus this process's requests waiting for one. Zero without a queue.
	QueueDepth int

	// Waited is how long Allow slept inside the limiter before answering:
	// with a [FairQueue], the wait for the request's slot and for a place
	// in the queue. Zero for a limiter that answers at once. A limiter
	// that waits must say so here: the Transport reports the wait, and
	// fences the send that follows it against a takeover of its action
	// during the wait (a ledger mark written again).
	Waited time.Duration
}

// Reason says why a [Decision] refused a request.
type Reason string

// The reasons a request can be refused.
const (
	// ReasonRate means a limit of the boundary has no token left.
	ReasonRate Reason = "rate"
	// ReasonOwner means the owner has used up its share of the boundary.
	ReasonOwner Reason = "owner"
	// ReasonCooldown means the boundary is paused by a cooldown, its own
	// or its scope's.
	ReasonCooldown Reason = "cooldown"
	// ReasonQueue means the owner's turn in the boundary's [FairQueue]
	// comes after the request's deadline.
	ReasonQueue Reason = "queue"
)

// Both limiters implement Limiter.
var (
	_ Limiter = (*Local)(nil)
	_ Limiter = (*Redis)(nil)
)
