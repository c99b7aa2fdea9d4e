package budget

import "context"

// Budget bounds the retries sent to a destination to a fraction of its
// traffic, so an outage does not multiply the load on a provider. The
// Transport deposits one credit per first attempt and withdraws one per
// retry; a refused withdrawal ends the call with ErrBudgetExhausted.
// First attempts are never refused by a Budget.
//
// Local counts one process; Redis shares one budget through Redis.
// Implementations must be safe for concurrent use.
type Budget interface {
	// Deposit records a first attempt to dest.
	Deposit(ctx context.Context, dest string)
	// Withdraw asks to spend one retry on dest. The check and the spend
	// are one atomic step, so racing callers cannot overshoot.
	Withdraw(ctx context.Context, dest string) Decision
}

// Decision is a Budget's answer to one withdrawal.
type Decision struct {
	// Allowed reports whether the retry may be sent.
	Allowed bool
	// Deposits is the number of first attempts in the current window.
	Deposits int64
	// Retries is the number of retries allowed in the current window,
	// this one included when Allowed.
	Retries int64
	// Fallback reports that a shared budget could not be reached and the
	// decision came from its OnUnavailable mode.
	Fallback bool
}

// Ratio returns retries per first attempt in the window; 0 without deposits.
func (d Decision) Ratio() float64 {
	if d.Deposits == 0 {
		return 0
	}
	return float64(d.Retries) / float64(d.Deposits)
}

// Unlimited is a Budget that allows every retry. Use it to turn the
// retry budget off.
type Unlimited struct{}

// Deposit implements Budget.
func (Unlimited) Deposit(context.Context, string) {}

// Withdraw implements Budget; it always allows.
func (Unlimited) Withdraw(context.Context, string) Decision {
	return Decision{Allowed: true}
}
