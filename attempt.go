package retrybudget

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
)

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
		c.led.attempt(ctx, a.cls.Class)
	}
	if th := c.p.cfg.Throttle; th != nil {
		th.Record(c.dest, a.end, a.cls.Class == ClassSuccess || a.cls.Class == ClassBusiness)
	}
	recordOverload(c.p.cfg.Overload, c.p.clock, c.dest, a.err, a.start, a.end)
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
