package retrybudget

import (
	"context"
	"errors"
	"sync"
)

// Captured holds the Outcomes of the calls made with a context returned by
// CaptureOutcome: the latest maxCaptured of them. It is safe for concurrent
// use.
type Captured struct {
	mu       sync.Mutex // guards outcomes and unread
	outcomes []Outcome
	// unread is what the calls that ended since the latest Next left for
	// the next one, kept apart from outcomes so that a hold is never lost
	// to the bound on outcomes.
	unread capturedCalls
}

// capturedCalls sums up calls that ended, for Next.
type capturedCalls struct {
	// n is how many ended.
	n int
	// last is the Outcome of the latest; hold that of the first whose
	// step is StepHold, when held.
	last, hold Outcome
	held       bool
}

// ErrNoCall is the Reason of the Outcome that Captured.Next returns, with
// StepStop, when no call reached the Transport since the previous Next and
// the SDK returned no error: the SDK's client is not built on the
// Transport, or its call did not get the captured context. A wiring
// mistake, which running again cannot mend.
var ErrNoCall = errors.New("retrybudget: no call reached the Transport")

// maxCaptured bounds the Outcomes a Captured keeps, for a context that
// lives long.
const maxCaptured = 32

type captureCtxKey struct{}

// CaptureOutcome returns a context that records the Outcome of every call a
// Transport makes with it (or with a context derived from it), and the
// record. It reaches the caller where OutcomeOf cannot: when an SDK returns
// no *http.Response, replaces an error response's body, or re-sends a call
// on its own, and when http.Client.Timeout wraps the body:
//
//	ctx, out := retrybudget.CaptureOutcome(ctx)
//	_, err := sc.V1Charges.Create(ctx, params) // stripe-go, say
//	switch step, o := out.Next(err); step {
//	case retrybudget.StepRetry:
//		requeueAt(o.RetryAt)
//	// StepDone, StepStop, StepHold as with Next
//	}
//
//snippet:needs app, stripe, sdk
func CaptureOutcome(ctx context.Context) (context.Context, *Captured) {
	c := &Captured{}
	return context.WithValue(ctx, captureCtxKey{}, c), c
}

// Last returns the Outcome of the latest call that ended; ok is false when
// none has.
func (c *Captured) Last() (o Outcome, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.outcomes) == 0 {
		return Outcome{}, false
	}
	return c.outcomes[len(c.outcomes)-1], true
}

// All returns the Outcomes of the calls that ended, oldest first: an SDK
// that fetches a token first, or re-sends a call, makes several.
func (c *Captured) All() []Outcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Outcome(nil), c.outcomes...)
}

// Next returns what to do after an SDK call made with the captured
// context, which returned err, and the Outcome it read that from: Next's
// rule, applied to the calls the SDK made through the Transport. It reads
// the calls that ended since the previous Next (or since CaptureOutcome),
// so a Captured used for several SDK calls never answers one with the
// Outcome of another; call it once after each.
//
// An SDK may make several calls for one (a token fetch, a re-send): Next
// is StepHold with the first Outcome that holds, if any does; else it
// reads the latest, which is the SDK's call itself. A success is StepDone
// only when the SDK returned no error: with one (an answer it could not
// decode, a body cut short), it is StepStop with that error as the
// Outcome's Reason, since running again would send the call again, or
// replay the same answer. The SDK's error is read only through these
// Outcomes: a typed SDK error carrying no Outcome (stripe-go's
// *stripe.Error for a 400) is the rejection the Transport recorded.
//
// When no call reached the Transport, nothing was sent, and Next is never
// StepDone nor a blind StepRetry: an error that carries an *Error (the
// Transport was reached with another context) is read as Next reads it; a
// context's error is StepRetry (the caller's time ran out before the
// call); any other error is StepStop with that error as the Reason (the
// SDK refused the call itself, such as a malformed parameter); no error
// is StepStop with ErrNoCall, a wiring mistake.
func (c *Captured) Next(err error) (Step, Outcome) {
	c.mu.Lock()
	calls := c.unread
	c.unread = capturedCalls{}
	c.mu.Unlock()
	switch {
	case calls.held:
		return StepHold, calls.hold
	case calls.n > 0:
		step, o := calls.last.advise()
		if step == StepDone && err != nil {
			o.Reason = err
			return StepStop, o
		}
		return step, o
	}
	var e *Error
	switch {
	case errors.As(err, &e):
		return e.Outcome.advise()
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return StepRetry, Outcome{Class: ClassNotSent, Reason: err}
	case err != nil:
		// As for ErrInvalidAction, the call itself is wrong.
		return StepStop, Outcome{Class: ClassBusiness, Reason: err}
	}
	return StepStop, Outcome{Class: ClassBusiness, Reason: ErrNoCall}
}

// captureOutcome records o in ctx's Captured, if any.
func captureOutcome(ctx context.Context, o *Outcome) {
	c, ok := ctx.Value(captureCtxKey{}).(*Captured)
	if !ok {
		return
	}
	hold := o.step() == StepHold
	c.mu.Lock()
	if len(c.outcomes) == maxCaptured {
		c.outcomes = append(c.outcomes[:0], c.outcomes[1:]...)
	}
	c.outcomes = append(c.outcomes, *o)
	c.unread.n++
	c.unread.last = *o
	if hold && !c.unread.held {
		c.unread.hold, c.unread.held = *o, true
	}
	c.mu.Unlock()
}
