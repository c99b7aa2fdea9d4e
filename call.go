package retrybudget

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/retrybudget/retrybudget/ledger"
)

// call is the state of one RoundTrip: the caller's request, the key and body
// shared by its attempts, and the Outcome being built. One allocation holds
// it all, the returned body wrapper included, to keep the success path lean.
type call struct {
	t      *Transport
	req    *http.Request
	header http.Header // the headers sent: req.Header, or a copy with the key
	// headerCopied reports whether header is the Transport's own copy
	// (carrying the key, or standing in for a nil caller's header).
	headerCopied bool
	// repeatable reports whether an attempt that may have been applied
	// can be repeated: an idempotent method or a key the provider honours.
	repeatable bool
	// traced reports whether attempts are traced to learn whether, and
	// how many times, the request was written: needed for methods that are
	// not idempotent, whose effects must be accounted for.
	traced   bool
	body     requestBody
	dest     string      // the destination for the Budget and the Throttle
	boundary string      // the limiter boundary; empty without a Limiter
	owner    string      // the tenant, for the limiter's per-owner share
	led      *ledgerCall // nil without a Ledger or an Action
	deadline time.Time   // zero when the call has none
	bo       *backoff.ExponentialBackOff
	out      Outcome
	resp     outcomeBody
	// res is the latest attempt's result, kept here so handing it to the
	// Classifier costs no allocation.
	res AttemptResult
	// resend holds the ids under which a give-up answers an SDK's
	// re-sends of this call (see repeat); numbered reports that the call
	// is itself an SDK's numbered re-send, counted as a retry.
	resend   []string
	numbered bool
	// waited is the time the call has spent waiting, on backoff, on
	// Retry-After and on the limiter; it never exceeds MaxWait.
	waited time.Duration
}

// newCall prepares the key, body and deadline of one call.
func (t *Transport) newCall(req *http.Request) (*call, error) {
	key, src, replaced, err := resolveKey(req, t.cfg.KeyHeader, t.noAction)
	if err != nil {
		return nil, err
	}
	c := &call{t: t, req: req, header: req.Header, dest: t.cfg.Destination(req)}
	c.out.Key, c.out.Route = key, t.route
	if c.header == nil {
		// net/http refuses a nil header for good; an empty one is meant.
		c.header, c.headerCopied = http.Header{}, true
	}
	if src == keyAction || src == keyGenerated {
		c.setKey(key, replaced)
	}
	// A hop of a redirect that http.Client follows (req.Response is set)
	// is not a new action: the first hop holds the ledger record.
	if a, ok := ActionFrom(req.Context()); ok && t.cfg.Ledger != nil && req.Response == nil && !t.noAction {
		c.led = &ledgerCall{key: ledger.Key(a)}
	}
	if t.cfg.Limiter != nil {
		c.boundary, c.owner = t.cfg.Boundary(req), ownerOf(req.Context())
	}
	idempotent := isIdempotent(req.Method)
	c.repeatable = idempotent || src == keyCaller || (src == keyAction && !t.cfg.OmitKey) ||
		(src == keyGenerated && t.cfg.KeysHonoured && !t.cfg.OmitKey)
	c.traced = !idempotent
	if c.body, err = prepareBody(req, t.cfg.MaxBodyBuffer); err != nil {
		return nil, err
	}
	if dl, ok := req.Context().Deadline(); ok {
		c.deadline = dl
	}
	if t.cfg.Deadline > 0 {
		if dl := t.clock.Now().Add(t.cfg.Deadline); c.deadline.IsZero() || dl.Before(c.deadline) {
			c.deadline = dl
		}
	}
	return c, nil
}

// run sends attempts until one succeeds or the call must stop.
func (c *call) run() (*http.Response, error) {
	ctx := c.req.Context()
	if resp, err, done := c.repeat(); done {
		return resp, err
	}
	if c.led != nil {
		if resp, err, done := c.reserve(); done {
			return resp, err
		}
	}
	if th := c.t.cfg.Throttle; th != nil && !th.allow(c.dest, c.t.clock.Now()) {
		c.out.Class = ClassCapacity
		return c.giveUp(nil, nil, ErrThrottled, func() {})
	}
	if !c.numbered {
		c.t.cfg.Budget.Deposit(ctx, c.dest)
	}
	for {
		if reason, cause := c.admit(); reason != nil {
			c.out.Class = ClassCapacity
			return c.giveUp(nil, cause, reason, func() {})
		}
		if !c.deadline.IsZero() && !c.t.clock.Now().Before(c.deadline) {
			// Waiting on the ledger or the limiter used up the time: an
			// attempt now could not finish, so none is sent.
			c.out.RetryAt = time.Time{}
			if c.out.Attempts == 0 {
				c.out.Class = ClassNotSent
			}
			return c.giveUp(nil, nil, ErrDeadline, func() {})
		}
		a := c.attempt()
		if a.bodyErr {
			return c.giveUp(nil, a.err, ErrBodyNotReplayable, a.cancel)
		}
		if a.cls.Class == ClassSuccess {
			return c.finish(a.resp, a.cancel), nil
		}
		plan := c.decide(a.cls)
		if plan.stop != nil {
			return c.giveUp(a.resp, a.err, plan.stop, a.cancel)
		}
		c.discard(a.resp)
		a.cancel()
		if obs := c.t.cfg.Observer.Retry; obs != nil {
			obs(RetryEvent{Request: c.req, Route: c.t.route, Attempt: c.out.Attempts + 1, Key: c.out.Key,
				Class: a.cls.Class, Delay: plan.delay, RetryAfter: plan.retryAfter})
		}
		c.waited += plan.delay
		if err := c.t.clock.Sleep(ctx, plan.delay); err != nil {
			return c.giveUp(nil, err, err, func() {})
		}
	}
}

// attemptResult is what run needs to know of one attempt.
type attemptResult struct {
	resp *http.Response
	err  error
	cls  Classification
	// cancel releases the attempt's context once the response is done
	// with.
	cancel context.CancelFunc
	// bodyErr reports that the body could not be produced (GetBody
	// failed), so nothing was sent.
	bodyErr bool
}

// attempt sends one attempt and classifies it.
func (c *call) attempt() attemptResult {
	start := c.t.clock.Now()
	areq, tr, cancel, err := c.newAttemptRequest(start)
	if err != nil {
		return attemptResult{err: err, cancel: cancel, bodyErr: true}
	}
	c.out.Attempts++
	resp, err := c.t.cfg.Base.RoundTrip(areq)
	c.res = AttemptResult{Request: areq, Response: resp, Err: err, Now: c.t.clock.Now()}
	if tr != nil {
		// A Base that emits no httptrace events (a wrapper, a mock) gives
		// no facts: then nothing is known and the conservative rules apply.
		c.res.Traced = tr.started.Load()
		c.res.Connected, c.res.Written = tr.connected.Load(), tr.writes.Load() > 0
		c.countResends(tr)
	}
	cls := c.t.cfg.Classifier.Classify(&c.res)
	c.record(cls, resp)
	c.cooldown(cls)
	c.ledgerAttempt(cls.Class)
	if th := c.t.cfg.Throttle; th != nil {
		th.record(c.dest, c.res.Now, cls.Class == ClassSuccess || cls.Class == ClassBusiness)
	}
	if obs := c.t.cfg.Observer.Attempt; obs != nil {
		ev := AttemptEvent{Request: c.req, Route: c.t.route, Attempt: c.out.Attempts, Key: c.out.Key,
			Class: cls.Class, Err: err, Start: start, Duration: c.res.Now.Sub(start)}
		if resp != nil {
			ev.StatusCode = resp.StatusCode
		}
		obs(ev)
	}
	return attemptResult{resp: resp, err: err, cls: cls, cancel: cancel}
}

// countResends accounts for the writes net/http made on its own within one
// attempt. net/http re-sends a request it deems replayable (one with an
// Idempotency-Key header and GetBody) when a reused connection breaks, even
// after the request was written; each such write may have been applied, so
// it counts as an attempt and makes the outcome maybe-applied.
func (c *call) countResends(tr *attemptTrace) {
	if extra := int(tr.writes.Load()) - 1; extra > 0 {
		c.out.Attempts += extra
		c.out.MaybeApplied = true
	}
}

// record folds one attempt's classification into the Outcome.
func (c *call) record(cls Classification, resp *http.Response) {
	c.out.Class = cls.Class
	c.out.Problem = cls.Problem
	c.out.StatusCode = 0
	if resp != nil {
		c.out.StatusCode = resp.StatusCode
	}
	c.out.MaybeApplied = c.out.MaybeApplied || cls.Class.mayHaveApplied()
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
	var tr *attemptTrace
	if c.traced {
		tr = &attemptTrace{}
		ctx = httptrace.WithClientTrace(ctx, tr.clientTrace())
	}
	if ctx == c.req.Context() && body == c.req.Body && !c.headerCopied {
		return c.req, tr, cancel, nil
	}
	areq := c.req.WithContext(ctx)
	areq.Header = c.header
	areq.Body = body
	areq.ContentLength = c.body.length
	areq.GetBody = c.body.getBody
	if !c.repeatable {
		// net/http re-sends by itself a request it deems replayable (an
		// Idempotency-Key header and GetBody, or no body), even after it
		// was written. A request that is not safe to repeat must not be:
		// no GetBody, and a non-nil body even when empty (net/http still
		// sends it as Content-Length: 0).
		areq.GetBody = nil
		if areq.Body == nil || areq.Body == http.NoBody {
			areq.Body = io.NopCloser(strings.NewReader(""))
		}
	}
	return areq, tr, cancel, nil
}

// attemptContext bounds an attempt by AttemptTimeout and the call's own
// deadline (the context's deadline already applies by itself).
func (c *call) attemptContext(now time.Time) (context.Context, context.CancelFunc) {
	ctx := c.req.Context()
	var dl time.Time
	if c.t.cfg.Deadline > 0 {
		dl = c.deadline
	}
	if t := c.t.cfg.AttemptTimeout; t > 0 && (dl.IsZero() || now.Add(t).Before(dl)) {
		dl = now.Add(t)
	}
	if dl.IsZero() {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, dl)
}

// decide returns the plan for the next attempt; plan.stop is set when the
// call must end now.
func (c *call) decide(cls Classification) waitPlan {
	if ctxErr := c.req.Context().Err(); ctxErr != nil {
		return waitPlan{stop: ctxErr}
	}
	switch {
	case cls.Hint == HintNoRetry:
		return waitPlan{stop: ErrRejected}
	case cls.Hint == HintRetry:
	case cls.Class == ClassBusiness:
		return waitPlan{stop: ErrRejected}
	case !cls.Class.retryable(c.repeatable):
		return waitPlan{stop: ErrUncertain}
	}
	if c.bo == nil {
		c.bo = newBackOff(&c.t.cfg)
	}
	plan := planWait(&c.t.cfg, c.bo.NextBackOff(), c.t.clock.Now(), cls.RetryAt, c.deadline)
	c.out.RetryAt = plan.at
	switch {
	case plan.stop != nil:
	case c.waited+plan.delay > c.t.cfg.MaxWait:
		// No call waits longer than MaxWait in all, deadline or not.
		plan.stop = ErrWaitTooLong
	case c.out.Attempts >= c.t.cfg.MaxAttempts:
		plan.stop = ErrAttemptsExhausted
	case !c.body.replayable():
		plan.stop = ErrBodyNotReplayable
	case c.lostLease():
		// Another worker took the action over: it is the owner now, and
		// a retry from here would race it.
		plan.stop = ErrPending
	case !c.withdraw():
		// The backoff time would invite the caller straight back against
		// a budget that just said no; only the provider's own time is a
		// useful hint here.
		plan.stop = ErrBudgetExhausted
		c.out.RetryAt = cls.RetryAt
	}
	return plan
}

// withdraw asks the Budget for one retry and reports the decision to the
// Observer.
func (c *call) withdraw() bool {
	d := c.t.cfg.Budget.Withdraw(c.req.Context(), c.dest)
	if obs := c.t.cfg.Observer.Budget; obs != nil {
		obs(BudgetEvent{Request: c.req, Route: c.t.route, Destination: c.dest, Decision: d})
	}
	return d.Allowed
}

// finish returns a successful response with its Outcome attached.
func (c *call) finish(resp *http.Response, cancel context.CancelFunc) *http.Response {
	c.out.RetryAt = time.Time{}
	c.settle(resp)
	return c.attach(resp, cancel)
}

// giveUp ends the call: with the last response as (resp, nil) when there is
// one, else with an *Error.
func (c *call) giveUp(resp *http.Response, err, reason error, cancel context.CancelFunc) (*http.Response, error) {
	c.out.Reason = reason
	if reason == ErrRejected || reason == ErrUncertain {
		c.out.RetryAt = time.Time{}
	}
	c.body.close()
	c.settle(resp)
	c.remember(resp, err)
	if obs := c.t.cfg.Observer.GiveUp; obs != nil {
		obs(GiveUpEvent{Request: c.req, Outcome: c.out})
	}
	if resp != nil {
		return c.attach(resp, cancel), nil
	}
	cancel()
	return nil, &Error{Outcome: c.out, Cause: err}
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
	io.CopyN(io.Discard, resp.Body, c.t.cfg.MaxDrain)
	stop.Stop()
	resp.Body.Close()
}

// attemptTrace records what net/http/httptrace saw of one attempt. The
// flags are set from the transport's goroutines, possibly after RoundTrip
// returned, hence atomics.
type attemptTrace struct {
	started   atomic.Bool // GetConn fired: the base traces
	connected atomic.Bool
	writes    atomic.Int32
}

func (tr *attemptTrace) clientTrace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GetConn:      func(string) { tr.started.Store(true) },
		GotConn:      func(httptrace.GotConnInfo) { tr.connected.Store(true) },
		WroteRequest: func(httptrace.WroteRequestInfo) { tr.writes.Add(1) },
	}
}
