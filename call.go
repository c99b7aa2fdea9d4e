package retrybudget

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/retrybudget/retrybudget/ledger"
)

// call is the state of one RoundTrip: the caller's request, the key and body
// shared by its attempts, and the Outcome being built. Its methods in this
// file build, send, classify and report one attempt and fold it into the
// Outcome, for the call loop (run) and for a hedged race of two copies.
//
// One allocation holds it all, the returned body wrapper included, to keep the success path lean;
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
	// afterUnsafe reports that the call is a redirect hop of a request
	// that was not idempotent, which may have been applied (see
	// unsafeHopReason); unsafeRecorded, that a ledger recorded that
	// request under the Action, so a rerun replays it.
	afterUnsafe, unsafeRecorded bool
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
	c.out.MaybeApplied = c.out.MaybeApplied || resent || (cls.mayHaveApplied() && !cls.Unsaved)
	if c.led != nil {
		c.led.unsaved = cls.Unsaved
	}
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

// finish returns a successful response with its Outcome attached; for a
// redirect of an action another worker took over meanwhile, ErrPending
// instead, so that http.Client does not follow it.
func (c *call) finish(resp *http.Response, cancel context.CancelFunc) (*http.Response, error) {
	c.out.RetryAt = time.Time{}
	c.settle(resp)
	if c.led != nil && c.led.lostErr != nil && followed(resp) {
		// Another worker took the action over while this call sent it,
		// and refused its outcome: the redirect is not this call's to
		// follow. http.Client would send the hop on the action's behalf,
		// and a hop the new owner cannot see may apply it while the new
		// owner settles the action as not applied.
		// It ends as a call whose mark was refused does (beforeSend):
		// disowned, so the give-up records nothing on the new owner's
		// record.
		c.discard(resp)
		c.out.MaybeApplied = c.out.MaybeApplied || !isIdempotent(c.req.Method) // RFC 9110 §15.4
		cause := c.led.lostErr
		c.led.disown()
		return c.giveUp(nil, cause, ErrPending, cancel)
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 && resp.StatusCode != http.StatusNotModified &&
		!c.repeatable && !isIdempotent(c.req.Method) {
		// A redirect of a request that may have been applied (a 303
		// was; a provider may apply any other and redirect) is kept as
		// a give-up is: an SDK's re-send of the request, after its hop
		// failed, gets the same redirect, and http.Client follows it to
		// the hop's own give-up, instead of the first URL applying the
		// request again (a 307 is temporary, RFC 9110 §15.4.8).
		c.remember(resp, nil)
	}
	return c.attach(resp, cancel), nil
}

// followed reports whether http.Client follows resp to another request:
// a redirect with a Location (RFC 9110 §15.4; 300, 304 and 305 it does
// not follow).
func followed(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return resp.Header.Get("Location") != ""
	}
	return false
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

// send sends one attempt and classifies it. It also accounts for the
// writes net/http made on its own: net/http re-sends a request it deems
// replayable (one with an Idempotency-Key header and GetBody) when a reused
// connection breaks, even after the request was written; each such write
// may have been applied, so the call loop counts it as an attempt and the
// outcome as maybe-applied.
func (c *call) send() tried {
	var start time.Time
	if c.p.cfg.AttemptTimeout > 0 || c.p.cfg.Observer.Attempt != nil || !c.p.cfg.Overload.Quiet() {
		start = c.p.clock.Now()
	}
	areq, tr, cancel, err := c.newAttemptRequest(start)
	if err != nil {
		return tried{err: err, cancel: cancel, bodyErr: true}
	}
	resp, err := c.p.cfg.Base.RoundTrip(areq)
	return c.classify(areq, tr, resp, err, cancel, start)
}

// classify reads what one attempt sent as areq (traced by tr, when traced)
// got back, and classifies it; cancel releases the attempt's context and
// start is when it began (zero when nothing reads it).
func (c *call) classify(areq *http.Request, tr *attemptTrace, resp *http.Response, err error,
	cancel context.CancelFunc, start time.Time) tried {
	c.res = AttemptResult{Request: areq, Response: resp, Err: err, Repeatable: c.repeatable}
	if c.readsEnd(resp) {
		c.res.Now = c.p.clock.Now()
	}
	s := tried{resp: resp, err: err, cancel: cancel, start: start, end: c.res.Now}
	if tr != nil {
		// A Base that emits no httptrace events (a wrapper, a mock) gives
		// no facts: then nothing is known and the conservative rules apply.
		c.res.Traced = tr.started.Load()
		c.res.Connected, c.res.Written = tr.connected.Load(), tr.writes.Load() > 0
		s.resends = max(int(tr.writes.Load())-1, 0)
	}
	s.cls = c.p.cfg.Classifier.Classify(&c.res)
	return s
}

// readsEnd reports whether anything reads the time an attempt that got
// resp ended: the Throttle, the Observer, a Classifier of the caller's, or
// the DefaultClassifier on a failure (for Retry-After). Reading the clock
// costs as much as the rest of a GET's own work on some virtual machines,
// so a success that nobody times leaves it unread and sent.end zero.
func (c *call) readsEnd(resp *http.Response) bool {
	cfg := &c.p.cfg
	if cfg.Throttle != nil || cfg.Observer.Attempt != nil || resp == nil || classifyStatus(resp.StatusCode) != ClassSuccess {
		return true
	}
	_, isDefault := cfg.Classifier.(DefaultClassifier)
	return !isDefault
}

// report tells the gates and the Observer about one attempt: the limiter
// may pause the boundary, the ledger records the send, the Throttle counts
// it. It writes nothing of the Outcome.
func (c *call) report(a *tried) {
	ctx := c.req.Context()
	if c.limit != nil {
		c.limit.cooldown(ctx, a.cls)
	}
	if c.led != nil {
		c.led.attempt(a.cls.Class)
	}
	if th := c.p.cfg.Throttle; th != nil {
		th.Record(c.dest, a.end, a.cls.Class == ClassSuccess || a.cls.Class == ClassBusiness)
	}
	recordOverload(c.p.cfg.Overload, c.p.clock, c.dest, c.tenant(), a.err, a.start, a.end)
	if obs := c.p.cfg.Observer.Attempt; obs != nil {
		ev := AttemptEvent{Request: c.req, Route: c.p.routeName, Attempt: cmp.Or(a.number, c.out.Attempts), Key: c.out.Key,
			Class: a.cls.Class, Err: a.err, Start: a.start, Duration: a.end.Sub(a.start), Hedge: a.hedge}
		if a.resp != nil {
			ev.StatusCode = a.resp.StatusCode
		}
		if c.first != nil {
			ev.Replaced = c.first.replaced
		}
		obs(ev)
	}
}

// newAttemptRequest builds the request of one attempt. The caller's request
// is sent as is when nothing differs; otherwise a shallow copy carries the
// key header, a fresh body and the attempt's context.
func (c *call) newAttemptRequest(now time.Time) (*http.Request, *attemptTrace, context.CancelFunc, error) {
	body, err := c.body.next()
	if err != nil {
		return nil, nil, func() {}, fmt.Errorf("retrybudget: GetBody: %w", err)
	}
	ctx, cancel := c.attemptContext(now)
	// The first attempt of a traced call is built in the call's own room
	// (see call.first); a later one in its own allocations.
	first := c.first != nil && !c.firstUsed
	c.firstUsed = c.firstUsed || first
	var tr *attemptTrace
	if c.traced {
		if first {
			tr = &c.first.trace
		} else {
			tr = &attemptTrace{}
		}
		ctx = tr.context(ctx)
	}
	if ctx == c.req.Context() && body == c.req.Body && !c.headerCopied {
		return c.req, tr, cancel, nil
	}
	var areq *http.Request
	if first {
		// WithContext is inlined and its copy does not escape: the
		// caller's request is copied into the call's room without an
		// allocation of its own.
		c.first.req = *c.req.WithContext(ctx)
		areq = &c.first.req
	} else {
		areq = c.req.WithContext(ctx)
	}
	areq.Header = c.header
	areq.Body = body
	areq.ContentLength = c.body.length
	areq.GetBody = c.body.getBody
	if !c.repeatable {
		// net/http re-sends by itself a request it deems replayable, even
		// after it was written: over HTTP/1, one whose body it can rewind
		// (GetBody, or no body) and that carries an Idempotency-Key or
		// X-Idempotency-Key header (Request.isReplayable). A request that
		// is not safe to repeat must not be: no GetBody, and for one
		// without a body, which must go out as bare net/http sends it
		// (http.NoBody: Content-Length: 0, not chunked), the key under a
		// header name net/http does not look up (see hideReplayKeys).
		areq.GetBody = nil
		if areq.Body == nil || areq.Body == http.NoBody {
			areq.Body = http.NoBody
			areq.Header = hideReplayKeys(areq.Header)
		}
	}
	return areq, tr, cancel, nil
}

// hideReplayKeys returns h, or a copy of it in which the headers that make
// net/http take a request as replayable (Request.isReplayable looks up
// Idempotency-Key and X-Idempotency-Key, in canonical form only) are
// stored under their lower-case names. Field names are case-insensitive
// (RFC 9110 §5.1), so the provider receives the same header, and HTTP/2
// sends every name in lower case anyway; but net/http no longer finds
// them and will not re-send the request after writing it.
func hideReplayKeys(h http.Header) http.Header {
	var out http.Header
	for _, name := range [...]string{"Idempotency-Key", "X-Idempotency-Key"} {
		v, ok := h[name]
		if !ok {
			continue
		}
		if out == nil {
			out = h.Clone()
		}
		delete(out, name)
		out[strings.ToLower(name)] = v
	}
	if out == nil {
		return h
	}
	return out
}

// attemptContext bounds an attempt by AttemptTimeout and the call's own
// deadline (the context's deadline already applies by itself).
func (c *call) attemptContext(now time.Time) (context.Context, context.CancelFunc) {
	ctx := c.req.Context()
	var dl time.Time
	if c.p.cfg.Deadline > 0 {
		dl = c.deadline
	}
	if t := c.p.cfg.AttemptTimeout; t > 0 && (dl.IsZero() || now.Add(t).Before(dl)) {
		dl = now.Add(t)
	}
	if dl.IsZero() {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, dl)
}
