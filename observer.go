package retrybudget

import (
	"net/http"
	"time"

	"github.com/retrybudget/retrybudget/budget"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/limiter"
)

// Observer receives the Transport's events, for logging and metrics, and the
// sweeps of a ledger.Monitor wired to its Sweep field. Each field is
// optional. Callbacks run synchronously on the caller's goroutine (the
// Monitor's, for Sweep), never while the Transport holds a lock; they must
// not modify the request and should return quickly.
type Observer struct {
	// Attempt is called after every attempt.
	Attempt func(AttemptEvent)
	// Retry is called before the Transport waits to retry.
	Retry func(RetryEvent)
	// GiveUp is called when a call ends without success.
	GiveUp func(GiveUpEvent)
	// Budget is called after every retry budget decision.
	Budget func(BudgetEvent)
	// Limited is called when the rate limiter makes an attempt wait.
	Limited func(LimitEvent)
	// Cooldown is called when a provider answer pauses a limiter
	// boundary; the LimitEvent's Until is the end of the pause.
	Cooldown func(LimitEvent)
	// Ledger is called for every action ledger decision (a
	// ledger.Verdict) and for every store operation that failed.
	Ledger func(LedgerEvent)
	// Sweep receives a ledger sweep's report: the stuck and uncertain
	// actions it found and what reconciling them did. The Transport never
	// sweeps; pass Sweep as ledger.MonitorConfig.Report, so the Observer
	// that sees the calls sees the sweeps too:
	//
	//	ledger.Monitor(ctx, ledger.MonitorConfig{Store: s, Report: obs.Sweep})
	Sweep func(ledger.SweepReport)
}

// isZero reports whether o observes nothing.
func (o *Observer) isZero() bool {
	return o.Attempt == nil && o.Retry == nil && o.GiveUp == nil &&
		o.Budget == nil && o.Limited == nil && o.Cooldown == nil && o.Ledger == nil &&
		o.Sweep == nil
}

// Join returns an Observer that calls o and then each of others in turn
// for every event, skipping their nil fields:
//
//	obs := tel.Observer().Join(slogretry.Observer(logger))
//
//snippet:needs app, sdk
func (o Observer) Join(others ...Observer) Observer {
	for _, x := range others {
		o.Attempt = chain(o.Attempt, x.Attempt)
		o.Retry = chain(o.Retry, x.Retry)
		o.GiveUp = chain(o.GiveUp, x.GiveUp)
		o.Budget = chain(o.Budget, x.Budget)
		o.Limited = chain(o.Limited, x.Limited)
		o.Cooldown = chain(o.Cooldown, x.Cooldown)
		o.Ledger = chain(o.Ledger, x.Ledger)
		o.Sweep = chain(o.Sweep, x.Sweep)
	}
	return o
}

// chain returns a function calling a then b; nil when both are nil.
func chain[E any](a, b func(E)) func(E) {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(e E) { a(e); b(e) }
}

// BudgetEvent describes one retry budget decision.
type BudgetEvent struct {
	// Request is the caller's request.
	Request *http.Request
	// Route names the Route that matched the request; empty when none did.
	Route string
	// Destination is the budget's destination key.
	Destination string
	// Decision is the budget's answer; Decision.Ratio() is the current
	// retries per first attempt.
	Decision budget.Decision
}

// AttemptEvent describes one finished attempt.
type AttemptEvent struct {
	// Request is the caller's request.
	Request *http.Request
	// Route names the Route that matched the request; empty when none did.
	Route string
	// Attempt is the attempt's number, starting at 1. The two copies of a
	// hedged attempt are numbered in the order they are reported.
	Attempt int
	// Key is the idempotency key sent, if any.
	Key string
	// Replaced is the key the caller or an SDK had put in the key header,
	// which Key replaced: an Action's key wins, so that a re-submitted
	// action reaches the provider under the key of its first submission
	// (stripe-go, for one, sets a fresh random key on every POST). Empty
	// when no key was replaced.
	Replaced string
	// Class is the attempt's class.
	Class Class
	// StatusCode is the response status; 0 when Err is set.
	StatusCode int
	// Err is the transport error, if any.
	Err error
	// Start is when the attempt began, by the Transport's clock.
	Start time.Time
	// Duration is how long the attempt took.
	Duration time.Duration
	// Hedge reports a hedged copy: sent while the call's first attempt
	// was still in flight (Config.HedgeDelay).
	Hedge bool
	// Canceled reports the copy of a hedged attempt that the Transport
	// cancelled because the other copy answered first: no failure, never
	// retried, left out of the Throttle. Its Class is ClassMaybeSent (it
	// may have reached the provider) and its Err context.Canceled.
	Canceled bool
}

// RetryEvent describes a retry about to be waited for.
type RetryEvent struct {
	// Request is the caller's request.
	Request *http.Request
	// Route names the Route that matched the request; empty when none did.
	Route string
	// Attempt is the number of the attempt that will be sent next.
	Attempt int
	// Key is the idempotency key sent, if any.
	Key string
	// Class is the class of the attempt that failed.
	Class Class
	// Delay is how long the Transport waits before the next attempt.
	Delay time.Duration
	// RetryAfter is the wait the provider asked for; 0 when it gave none.
	RetryAfter time.Duration
}

// GiveUpEvent describes a call that ended without success.
type GiveUpEvent struct {
	// Request is the caller's request.
	Request *http.Request
	// Outcome is the call's outcome; its Reason says why it ended.
	Outcome Outcome
}

// LimitEvent describes a wait imposed by the rate limiter (Observer.Limited)
// or a pause of a whole limiter boundary (Observer.Cooldown).
type LimitEvent struct {
	// Request is the caller's request.
	Request *http.Request
	// Route names the Route that matched the request; empty when none did.
	Route string
	// Boundary is the limiter boundary the request counts against.
	Boundary string
	// Decision is the limiter's answer; zero for a Cooldown.
	Decision limiter.Decision
	// Wait is how long the Transport waits (or would wait) before asking
	// again; for an allowed Decision, how long the limiter made the call
	// wait inside Allow (Decision.Waited, a fair queue's slot), reported
	// only when it did. Zero for a Cooldown.
	Wait time.Duration
	// Until is the end of the boundary's pause, for a Cooldown; zero for
	// a wait.
	Until time.Time
}

// LedgerEvent describes one action ledger decision or failure.
type LedgerEvent struct {
	// Request is the caller's request.
	Request *http.Request
	// Route names the Route that matched the request; empty when none did.
	Route string
	// Action is the action.
	Action Action
	// Op is the store operation: "reserve" for the decision taken before
	// the call sends anything, or the operation that failed with Err
	// ("reserve", "mark sending", "attempt", "renew", "complete",
	// "fail"). A fenced operation refused because another process holds
	// the action now has an Err wrapping ledger.ErrNotOwner, and
	// ledger.ErrOwnerShared when that process uses this one's Owner.
	Op string
	// Verdict is the ledger's decision when Op is "reserve" and Err is
	// nil; otherwise it is meaningless.
	Verdict ledger.Verdict
	// Path is the decision path in words, from ledger.Resolve.
	Path []string
	// Err is the store's error, if any.
	Err error
	// Expired reports, with a created verdict, that the action's earlier
	// record had outlived its retention and this call runs it as a new
	// action (ledger.Reservation.Expired): the expiry event.
	Expired bool
}
