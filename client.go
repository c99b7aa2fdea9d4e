package retrybudget

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/retrybudget/retrybudget/limiter"
)

// Transport is an http.RoundTripper that makes repeated outbound requests
// safe: it gives every call a stable idempotency key, classifies each
// failure, waits with capped, jittered exponential backoff that honours
// Retry-After and the deadline, and reports an Outcome the caller can act on.
//
// A Transport is safe for concurrent use. Use it as the Transport of an
// http.Client:
//
//	client := &http.Client{Transport: retrybudget.New(retrybudget.Config{})}
type Transport struct {
	// policy serves the requests that match no Route.
	policy
	// routes hold the policy of each Route.
	routes []route
}

// New returns a Transport configured by cfg, whose zero fields take their
// documented defaults.
func New(cfg Config) *Transport {
	return newTransport(cfg, realClock{})
}

// newTransport returns the Transport of cfg running on clk: it and every
// component it builds by default (its routes' policies, the default
// Budget) read the time and wait through clk, so a test's fake clock
// reaches them all.
func newTransport(cfg Config, clk clock) *Transport {
	cfg = cfg.withDefaults(clk)
	return &Transport{policy: policy{cfg: cfg, clock: clk, hedge: newHedging(cfg.HedgeDelay, cfg.HedgePercentile, cfg.HedgeWrites)}, routes: newRoutes(cfg, clk)}
}

// RoundTrip implements http.RoundTripper. It never modifies req. Any
// response the provider sent is returned as (resp, nil), whatever its
// status, with its body unread; OutcomeOf(resp) tells whether the Transport
// gave up on it. When there is no response to return, the error is an
// *Error.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.check(req); err != nil {
		return nil, refuse(req, err, nil)
	}
	p := &t.policy
	if len(t.routes) > 0 {
		if rp := match(t.routes, req); rp != nil {
			p = rp
		}
	}
	c, err := p.newCall(req)
	if err != nil {
		if errors.Is(err, ErrInvalidAction) {
			return nil, refuse(req, ErrInvalidAction, nil)
		}
		return nil, refuse(req, ErrBodyUnreadable, err)
	}
	resp, err := c.run()
	captureOutcome(req.Context(), &c.out)
	return resp, err
}

// CloseIdleConnections closes the idle connections of the base transport,
// when it has that method, so http.Client.CloseIdleConnections works through
// a Transport.
func (t *Transport) CloseIdleConnections() {
	closeIdle := func(base http.RoundTripper) {
		if c, ok := base.(interface{ CloseIdleConnections() }); ok {
			c.CloseIdleConnections()
		}
	}
	closeIdle(t.cfg.Base)
	// A route's Base may be the Transport's own: closing twice is harmless,
	// and Bases need not be comparable.
	for _, r := range t.routes {
		closeIdle(r.p.cfg.Base)
	}
}

// Errors for requests the Transport cannot send at all.
var (
	errNotNew = errors.New("retrybudget: Transport not created with New")
	errNilURL = errors.New("retrybudget: nil Request.URL")
)

// refuse ends a call refused before any attempt: nothing was sent. It
// closes the request's body, as RoundTrip must, and records the Outcome for
// CaptureOutcome like any call's.
func refuse(req *http.Request, reason, cause error) *Error {
	e := &Error{Outcome: Outcome{Class: ClassNotSent, Reason: reason}, Cause: cause}
	if reason == ErrInvalidAction {
		// The request itself is wrong, as a rejection is: nothing failed
		// on the way, and retrying cannot help.
		e.Class = ClassBusiness
	}
	if req != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		captureOutcome(req.Context(), &e.Outcome)
	}
	return e
}

// check refuses a request that cannot be sent, as net/http does, rather
// than panicking on it.
func (t *Transport) check(req *http.Request) error {
	switch {
	case t.cfg.Classifier == nil:
		return errNotNew
	case req == nil || req.URL == nil:
		return errNilURL
	}
	return nil
}

// newCall prepares the key, body and deadline of one call.
func (p *policy) newCall(req *http.Request) (*call, error) {
	action, hasAction := ActionFrom(req.Context())
	// A hop of an unsafe request stands for it: its failure must not read
	// as "nothing applied" (see unsafeHopReason).
	afterUnsafe := req.Response != nil && req.Response.Request != nil && !isIdempotent(req.Response.Request.Method)
	// Under an Action and a ledger the request's record holds the
	// redirect, and a rerun replays it: running it again is safe.
	unsafeRecorded := hasAction && !p.noAction && p.cfg.Ledger.Store != nil
	// A safe method has no effect to deduplicate (RFC 9110 §9.2.1): it
	// goes to the provider each time, unkeyed and outside the ledger, so
	// a list's next page is no conflict and a read is never stale.
	hasAction = hasAction && !p.noAction && (p.safeActions || !isSafe(req.Method))
	if hasAction && p.cfg.ActionScope != nil {
		action = ScopedAction(action, p.cfg.ActionScope(req))
	}
	var origin Action // the action a redirect hop derives from
	keyOf := action   // the action whose key the call sends
	if hasAction && req.Response != nil {
		// A hop of a redirect that http.Client follows is a request of
		// its own, under an action derived from the first (redirect.go).
		origin, action = action, redirectAction(action, redirectHop(req))
		keyOf = hopKeyAction(origin, action, req, p.cfg.KeysHonoured)
	}
	callerKey := headerValue(req.Header, p.cfg.KeyHeader)
	key, src, replaced, err := resolveKey(&p.keys, req.Method, callerKey, keyOf, hasAction)
	if err != nil {
		return nil, err
	}
	sendsKey := keySent(p.cfg.OmitKey, src, replaced)
	keyed := callerKey != "" || sendsKey
	ledgered := hasAction && p.cfg.Ledger.Store != nil
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
	repeatable := idempotent || (src == keyCaller && (!p.cfg.OmitKey || p.cfg.KeysHonoured)) ||
		(src == keyAction && !p.cfg.OmitKey) || (src == keyGenerated && p.cfg.KeysHonoured && !p.cfg.OmitKey)
	var deadline time.Time
	if dl, ok := req.Context().Deadline(); ok {
		deadline = dl
	}
	if p.cfg.Deadline > 0 {
		if dl := p.clock.Now().Add(p.cfg.Deadline); deadline.IsZero() || dl.Before(deadline) {
			deadline = dl
		}
	}
	// The call is filled in as it is allocated, which spares the GC's
	// write barrier its fields.
	proto := call{p: p, req: req, header: req.Header, dest: p.cfg.Destination(req), deadline: deadline,
		out: Outcome{Key: key, Route: p.routeName}, repeatable: repeatable, traced: traced,
		resendable: callerKey != "" || retryCountValue(req.Header) != "", afterUnsafe: afterUnsafe, unsafeRecorded: unsafeRecorded}
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
		c.led = &ledgerGate{key: action, origin: origin, cfg: &p.cfg, caller: req, routeName: p.routeName, keyed: keyed,
			deadline: deadline, clock: p.clock, foldsMark: repeatable && p.cfg.KeysHonoured}
	}
	if p.cfg.Limiter != nil {
		// The tenant of the action is the limiter's owner, for its
		// per-owner share.
		c.limit = &limitGate{lim: p.cfg.Limiter, req: limiter.Request{Boundary: p.cfg.Boundary(req), Owner: action.Tenant},
			caller: req, routeName: p.routeName, clock: p.clock, maxWait: p.cfg.MaxWait, observer: &p.cfg.Observer}
	}
	if c.body, err = prepareBody(req, p.cfg.MaxBodyBuffer); err != nil {
		return nil, err
	}
	return c, nil
}

// setKey puts the call's key in its own copy of the headers, and keeps the
// key it replaced for the Observer's AttemptEvent. The copy's key value is
// c.first.key, so setting it costs no allocation beyond the map; the call
// must have been made with first for this reason (see keySent).
func (c *call) setKey(key, replaced string) {
	c.first.key[0] = key
	c.header, c.headerCopied = withValue(c.req.Header, c.p.cfg.KeyHeader, c.first.key[:]), true
	c.first.replaced = replaced
}

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
		body, bodyErr := c.body.content(c.p.cfg.MaxBodyBuffer)
		r := c.led.reserve(ctx, body, bodyErr, c.p.clock.Now())
		c.out.MaybeApplied = c.out.MaybeApplied || r.maybeApplied
		switch {
		case r.replay != nil:
			return c.replay(r.replay), nil
		case r.stop != nil:
			c.out.Class, c.out.RetryAt = unsentClass(r.stop), r.retryAt
			return c.giveUp(nil, r.cause, r.stop, noCancel)
		}
	}
	if th := c.p.cfg.Throttle; th != nil && !th.Allow(c.dest, c.p.clock.Now()) {
		c.out.Class = ClassCapacity
		return c.giveUp(nil, nil, ErrThrottled, noCancel)
	}
	if !overloadAllows(c.p.cfg.Overload, c.p.clock, c.p.cfg.AttemptTimeout, c.dest, c.tenant(), c.deadline) {
		c.out.Class = ClassCapacity
		return c.giveUp(nil, nil, ErrThrottled, noCancel)
	}
	if !c.numbered {
		c.p.cfg.Budget.Deposit(ctx, c.dest)
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
			if adm.delayed && c.led != nil {
				c.led.delayed()
			}
		}
		if !c.deadline.IsZero() && !c.p.clock.Now().Before(c.deadline) {
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
			return c.finish(a.resp, a.cancel)
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
			return c.giveUp(a.resp, withCause(a.err, plan.cause), plan.stop, a.cancel)
		}
		c.discard(a.resp)
		a.cancel()
		if obs := c.p.cfg.Observer.Retry; obs != nil {
			obs(RetryEvent{Request: c.req, Route: c.p.routeName, Attempt: c.out.Attempts + 1, Key: c.out.Key,
				Class: a.cls.Class, Delay: plan.delay, RetryAfter: plan.retryAfter})
		}
		c.waited += plan.delay
		if err := c.p.clock.Sleep(ctx, plan.delay); err != nil {
			return c.giveUp(nil, err, err, noCancel)
		}
	}
}

// giveUp ends the call: with the last response as (resp, nil) when there is
// one, else with an *Error.
func (c *call) giveUp(resp *http.Response, err, reason error, cancel context.CancelFunc) (*http.Response, error) {
	c.out.Reason = reason
	if c.afterUnsafe {
		reason, err = c.unsafeHopReason(reason, err)
		c.out.Reason = reason
	}
	if c.numbered && c.out.Attempts == 0 && (c.led == nil || c.led.token == 0) {
		// An SDK's numbered re-send that ends before sending anything:
		// the SDK's earlier sends of the same call, given up on elsewhere
		// or too long ago to be remembered, may have applied it, and this
		// call cannot tell otherwise. A call that owns its action can:
		// the ledger granted it as never sent or as failed without an
		// effect (a re-send or reconcile grant set MaybeApplied already),
		// and every earlier send under the Action went through it.
		c.out.MaybeApplied = true
		reason, err = c.unsentResendReason(reason, err)
		c.out.Reason = reason
	}
	if reason == ErrRejected || reason == ErrUncertain {
		c.out.RetryAt = time.Time{}
	}
	c.body.close()
	c.settle(resp)
	c.remember(resp, err)
	if obs := c.p.cfg.Observer.GiveUp; obs != nil {
		obs(GiveUpEvent{Request: c.req, Outcome: c.out})
	}
	if resp != nil {
		return c.attach(resp, cancel), nil
	}
	cancel()
	return nil, &Error{Outcome: c.out, Cause: err}
}
