package retrybudget

import (
	"context"
	"sync"
)

// Captured holds the Outcomes of the calls made with a context returned by
// CaptureOutcome: the latest maxCaptured of them. It is safe for concurrent
// use.
type Captured struct {
	mu       sync.Mutex // guards outcomes
	outcomes []Outcome
}

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
//	if o, ok := out.Last(); ok && errors.Is(o.Reason, retrybudget.ErrWaitTooLong) {
//		requeueAt(o.RetryAt)
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

// captureOutcome records o in ctx's Captured, if any.
func captureOutcome(ctx context.Context, o *Outcome) {
	c, ok := ctx.Value(captureCtxKey{}).(*Captured)
	if !ok {
		return
	}
	c.mu.Lock()
	if len(c.outcomes) == maxCaptured {
		c.outcomes = append(c.outcomes[:0], c.outcomes[1:]...)
	}
	c.outcomes = append(c.outcomes, *o)
	c.mu.Unlock()
}
