package retrybudget

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/retrybudget/retrybudget/ledger"
)

// call is the state of one RoundTrip: the caller's request, the key and body
// shared by its attempts, and the Outcome being built. One allocation holds
// it all, the returned body wrapper included, to keep the success path lean;
// a traced call's allocation holds its first attempt too (see tracedCall).
// Only the gates stand apart, made for the calls that have them.
//
// run is the one writer of out; the gates (limit, led) and the budget take
// what they need and return what they decided.
type call struct {
	p      *policy
	req    *http.Request
	header http.Header // the headers sent: req.Header, or a copy with the key
	// first is the room for the first attempt of a traced call, in the
	// call's own allocation; nil for a call that is not traced (see
	// firstUsed).
	first    *firstAttempt
	body     requestBody
	dest     string      // the destination for the Budget and the Throttle
	limit    *limitGate  // nil without a Limiter
	led      *ledgerGate // nil without a Ledger or an Action
	deadline time.Time   // zero when the call has none
	bo       *backoff.ExponentialBackOff
	out      Outcome
	resp     outcomeBody
	// res is the latest attempt's result, kept here so handing it to the
	// Classifier costs no allocation.
	res AttemptResult
	// waited is the time the call has spent waiting, on backoff, on
	// Retry-After and on the limiter; it never exceeds MaxWait.
	waited time.Duration

	// The flags come last and together, to keep the call small.

	// headerCopied reports whether header is the Transport's own copy
	// (carrying the key, or standing in for a nil caller's header).
	headerCopied bool
	// repeatable reports whether an attempt that may have been applied
	// can be repeated: an idempotent method or a key the provider honours.
	repeatable bool
	// traced reports whether attempts are traced to learn whether, and
	// how many times, the request was written: needed for methods that are
	// not idempotent, for keyed requests (which net/http may re-send) and
	// for ledger calls, whose effects must be accounted for.
	traced bool
	// firstUsed reports that the first attempt took first: a later
	// attempt gets its own, since net/http may still read the first
	// attempt's request and report to its trace after RoundTrip returned.
	firstUsed bool
	// numbered reports that the call is an SDK's numbered re-send of an
	// earlier one (see repeat), counted as a retry.
	numbered bool
	// resendable reports that an SDK's re-send of the call can be told
	// (see resendIDs): the caller's request carries a key or a retry count.
	resendable bool
}

// tried is what the call loop needs to know of one attempt.
type tried struct {
	resp *http.Response
	err  error
	cls  Classification
	// cancel releases the attempt's context once the response is done
	// with.
	cancel context.CancelFunc
	// bodyErr reports that the body could not be produced (GetBody
	// failed), so nothing was sent.
	bodyErr bool
	// resends is how many more times net/http wrote the request on its
	// own within the attempt (see send).
	resends int
	// start and end bound the attempt, by the Transport's clock; each is
	// read only when something needs it (AttemptTimeout, the Observer or
	// an Overload that is not quiet for start, see readsEnd for end), and
	// is zero otherwise.
	start, end time.Time
	// hedges is how many more copies of the request were sent while this
	// one was in flight (see hedge.go), each an attempt of its own.
	hedges int
	// hedge reports that this attempt is such a copy; number, when not
	// zero, is its number for the Observer (zero: the call's count).
	hedge  bool
	number int
}

// tracedCall is a call with room for its first attempt, allocated as one.
type tracedCall struct {
	call
	first firstAttempt
}

// firstAttempt is what the first attempt of a traced call needs beyond the
// call: its request, its trace, and the value of the key header.
type firstAttempt struct {
	req   http.Request
	trace attemptTrace
	key   [1]string
	// replaced is the key that key replaced in the header (see setKey).
	replaced string
}

// noCancel is the cancel of a call that ends without an attempt context.
func noCancel() {}

// record folds one attempt's classification into the Outcome; resent
// reports that net/http wrote the request more than once, each write
// possibly applied.
func (c *call) record(cls Classification, resp *http.Response, resent bool) {
	c.out.Class = cls.Class
	c.out.Problem = cls.Problem
	c.out.StatusCode = 0
	if resp != nil {
		c.out.StatusCode = resp.StatusCode
	}
	c.out.MaybeApplied = c.out.MaybeApplied || resent || cls.mayHaveApplied()
}

// replay answers with the stored outcome o of a completed action. Nothing
// is sent, so the caller's body is closed here, as RoundTrip must.
func (c *call) replay(o *ledger.Outcome) *http.Response {
	c.body.close()
	resp := replayResponse(c.req, o)
	c.out.Replayed, c.out.BodyOmitted = true, o.BodyOmitted
	c.out.Class, c.out.StatusCode = classifyStatus(o.Status), o.Status
	if c.out.Class != ClassSuccess {
		c.out.Reason = ErrRejected
	}
	return c.attach(resp, noCancel)
}

// finish returns a successful response with its Outcome attached.
func (c *call) finish(resp *http.Response, cancel context.CancelFunc) *http.Response {
	c.out.RetryAt = time.Time{}
	c.settle(resp)
	return c.attach(resp, cancel)
}

// settle has the ledger record how the owned action ended.
func (c *call) settle(resp *http.Response) {
	if c.led != nil {
		c.led.settle(c.req.Context(), &c.out, resp)
	}
}

// attach wraps resp's body so that OutcomeOf finds the Outcome, and so that
// closing it releases the attempt's context. A 101 Switching Protocols body
// is a read-write stream that must keep its type, so it is left alone.
func (c *call) attach(resp *http.Response, cancel context.CancelFunc) *http.Response {
	if resp.StatusCode == http.StatusSwitchingProtocols || resp.Body == nil {
		// net/http detaches an upgraded connection from the request's
		// context, so releasing the attempt's context is safe.
		cancel()
		return resp
	}
	c.resp = outcomeBody{ReadCloser: resp.Body, outcome: &c.out, cancel: cancel}
	resp.Body = &c.resp
	return resp
}

// drainWait bounds the time spent draining a response that will be
// retried: a body that trickles is dropped with its connection instead.
const drainWait = 100 * time.Millisecond

// discard drains a bounded part of a response that will be retried, so its
// connection can be reused, and closes it. The drain is bounded in bytes
// (MaxDrain) and in time (drainWait): closing the body from the timer ends a
// read that is stuck on a slow or stalled provider.
func (c *call) discard(resp *http.Response) {
	if resp == nil || resp.Body == nil {
		return
	}
	stop := time.AfterFunc(drainWait, func() { resp.Body.Close() })
	io.CopyN(io.Discard, resp.Body, c.p.cfg.MaxDrain)
	stop.Stop()
	resp.Body.Close()
}

// withdraw asks the Budget for one retry and reports the decision to the
// Observer.
func (c *call) withdraw() bool {
	d := c.p.cfg.Budget.Withdraw(c.req.Context(), c.dest)
	if obs := c.p.cfg.Observer.Budget; obs != nil {
		obs(BudgetEvent{Request: c.req, Route: c.p.routeName, Destination: c.dest, Decision: d})
	}
	return d.Allowed
}
