package retrybudget

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/limiter"
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
	t      *Transport
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

// newCall prepares the key, body and deadline of one call.
func (t *Transport) newCall(req *http.Request) (*call, error) {
	action, hasAction := ActionFrom(req.Context())
	hasAction = hasAction && !t.noAction
	callerKey := headerValue(req.Header, t.cfg.KeyHeader)
	key, src, replaced, err := t.resolveKey(req.Method, callerKey, action, hasAction)
	if err != nil {
		return nil, err
	}
	sendsKey := t.keySent(src, replaced)
	keyed := callerKey != "" || sendsKey
	// A hop of a redirect that http.Client follows (req.Response is set)
	// is not a new action: the first hop holds the ledger record.
	ledgered := hasAction && t.cfg.Ledger.Store != nil && req.Response == nil
	idempotent := isIdempotent(req.Method)
	// net/http re-sends by itself a keyed request with GetBody, or any
	// idempotent one, after a kept-alive connection broke, even once it
	// was written; only a trace tells that the first write happened when
	// the re-send then fails to dial. A ledger call needs the fact too.
	traced := !idempotent || ledgered || keyed
	// A key makes a request repeatable only where the provider honours it.
	// Under OmitKey the provider documents no key, so a key the caller or
	// an SDK put in the header is presumed ignored unless KeysHonoured says
	// otherwise: repeating a Twilio POST under a key Twilio never reads
	// would send the message again.
	repeatable := idempotent || (src == keyCaller && (!t.cfg.OmitKey || t.cfg.KeysHonoured)) ||
		(src == keyAction && !t.cfg.OmitKey) || (src == keyGenerated && t.cfg.KeysHonoured && !t.cfg.OmitKey)
	var deadline time.Time
	if dl, ok := req.Context().Deadline(); ok {
		deadline = dl
	}
	if t.cfg.Deadline > 0 {
		if dl := t.clock.Now().Add(t.cfg.Deadline); deadline.IsZero() || dl.Before(deadline) {
			deadline = dl
		}
	}
	// The call is filled in as it is allocated, which spares the GC's
	// write barrier its fields.
	proto := call{t: t, req: req, header: req.Header, dest: t.cfg.Destination(req), deadline: deadline,
		out: Outcome{Key: key, Route: t.route}, repeatable: repeatable, traced: traced,
		resendable: callerKey != "" || retryCountValue(req.Header) != ""}
	var c *call
	if traced {
		tc := &tracedCall{call: proto}
		c = &tc.call
		c.first = &tc.first
	} else {
		c = &call{}
		*c = proto
	}
	switch {
	case sendsKey:
		c.setKey(key, replaced)
	case src == keyAction || src == keyGenerated:
		c.out.Key = "" // OmitKey: none was sent
	}
	if c.header == nil {
		// net/http refuses a nil header for good; an empty one is meant.
		c.header, c.headerCopied = http.Header{}, true
	}
	if ledgered {
		c.led = &ledgerGate{key: action, cfg: &t.cfg, caller: req, route: t.route, keyed: keyed,
			deadline: deadline, clock: t.clock}
	}
	if t.cfg.Limiter != nil {
		// The tenant of the action is the limiter's owner, for its
		// per-owner share.
		c.limit = &limitGate{lim: t.cfg.Limiter, req: limiter.Request{Boundary: t.cfg.Boundary(req), Owner: action.Tenant},
			caller: req, route: t.route, clock: t.clock, maxWait: t.cfg.MaxWait, observer: &t.cfg.Observer}
	}
	if c.body, err = prepareBody(req, t.cfg.MaxBodyBuffer); err != nil {
		return nil, err
	}
	return c, nil
}

// noCancel is the cancel of a call that ends without an attempt context.
func noCancel() {}

// run sends attempts until one succeeds or the call must stop. It is the
// one writer of c.out.
func (c *call) run() (*http.Response, error) {
	ctx := c.req.Context()
	switch rc := c.repeat(); {
	case rc.answer != nil:
		return c.answer(rc.answer)
	case rc.refused:
		c.out.Class = ClassNotSent
		return c.giveUp(nil, nil, ErrBudgetExhausted, noCancel)
	}
	if c.led != nil {
		body, bodyErr := c.body.content(c.t.cfg.MaxBodyBuffer)
		r := c.led.reserve(ctx, body, bodyErr, c.t.clock.Now())
		c.out.MaybeApplied = c.out.MaybeApplied || r.maybeApplied
		switch {
		case r.replay != nil:
			return c.replay(r.replay), nil
		case r.stop != nil:
			c.out.Class, c.out.RetryAt = unsentClass(r.stop), r.retryAt
			return c.giveUp(nil, r.cause, r.stop, noCancel)
		}
	}
	if th := c.t.cfg.Throttle; th != nil && !th.Allow(c.dest, c.t.clock.Now()) {
		c.out.Class = ClassCapacity
		return c.giveUp(nil, nil, ErrThrottled, noCancel)
	}
	if !overloadAllows(c.t.cfg.Overload, c.t.clock, c.t.cfg.AttemptTimeout, c.dest, c.deadline) {
		c.out.Class = ClassCapacity
		return c.giveUp(nil, nil, ErrThrottled, noCancel)
	}
	if !c.numbered {
		c.t.cfg.Budget.Deposit(ctx, c.dest)
	}
	for {
		if c.limit != nil {
			adm := c.limit.admit(ctx, c.deadline, c.waited)
			c.waited = adm.waited
			if adm.stop != nil {
				c.out.Class = ClassCapacity
				if adm.stop == ErrRateLimited {
					c.out.RetryAt = adm.retryAt
				}
				return c.giveUp(nil, adm.cause, adm.stop, noCancel)
			}
		}
		if !c.deadline.IsZero() && !c.t.clock.Now().Before(c.deadline) {
			// Waiting on the ledger or the limiter used up the time: an
			// attempt now could not finish, so none is sent.
			c.out.RetryAt = time.Time{}
			if c.out.Attempts == 0 {
				c.out.Class = ClassNotSent
			}
			return c.giveUp(nil, nil, ErrDeadline, noCancel)
		}
		if c.led != nil {
			if stop, cause := c.led.beforeSend(ctx); stop != nil {
				if c.out.Attempts == 0 {
					c.out.Class = unsentClass(stop)
				}
				c.out.RetryAt = time.Time{}
				return c.giveUp(nil, cause, stop, noCancel)
			}
		}
		a := c.sendHedged()
		if a.bodyErr {
			return c.giveUp(nil, a.err, ErrBodyNotReplayable, a.cancel)
		}
		c.out.Attempts += 1 + a.resends + a.hedges
		c.out.Hedged = c.out.Hedged || a.hedges > 0
		c.record(a.cls, a.resp, a.resends+a.hedges > 0)
		c.report(&a)
		if a.cls.Class == ClassSuccess {
			return c.finish(a.resp, a.cancel), nil
		}
		plan, planned := c.next(a.cls)
		if planned {
			c.out.RetryAt = plan.at
		}
		if plan.stop == nil && !inProgress(a.resp, c.out.Key != "") && !c.withdraw() {
			// The backoff time would invite the caller straight back
			// against a budget that just said no; only the provider's own
			// time is a useful hint here.
			plan.stop, c.out.RetryAt = ErrBudgetExhausted, a.cls.RetryAt
		}
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
			return c.giveUp(nil, err, err, noCancel)
		}
	}
}

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

// giveUp ends the call: with the last response as (resp, nil) when there is
// one, else with an *Error.
func (c *call) giveUp(resp *http.Response, err, reason error, cancel context.CancelFunc) (*http.Response, error) {
	c.out.Reason = reason
	if c.numbered && c.out.Attempts == 0 {
		// An SDK's numbered re-send that ends before sending anything:
		// the SDK's earlier sends of the same call, given up on elsewhere
		// or too long ago to be remembered, may have applied it, and this
		// call cannot tell otherwise.
		c.out.MaybeApplied = true
	}
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
	io.CopyN(io.Discard, resp.Body, c.t.cfg.MaxDrain)
	stop.Stop()
	resp.Body.Close()
}
