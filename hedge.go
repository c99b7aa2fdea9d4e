package retrybudget

import (
	"context"
	"net/http"
	"time"
)

// Hedged requests (Config.HedgeDelay, HedgePercentile, HedgeWrites): the
// first attempt of a call that may hedge is raced against one more copy,
// sent when the first has no answer after the hedge delay; the first
// answer wins and the other copy is cancelled. The call loop sees one
// attempt (sendHedged) that says how many copies went out, and counts each
// as an attempt.
//
// A hedge adds load, so it is bounded like a retry and sent only when it
// cannot multiply the load of a provider in trouble:
//   - only for a request whose repetition changes nothing: an idempotent
//     method (RFC 9110 §9.2.2) that sends no key and has no ledger record
//     (a provider that honours keys deduplicates a later re-send, not two
//     copies in flight: Stripe answers the second with 409);
//   - only for the first attempt, and only while the destination's last
//     attempt got an answer: a retry, a destination in an outage or one
//     not yet heard from is not hedged;
//   - it counts against MaxAttempts, spends a retry credit of the Budget
//     and waits on the Limiter, as a retry would.

// hedgeable reports whether the call may be hedged at all: an idempotent
// method that the policy covers, no key sent and no ledger record. A
// traced call is one that sends a key, has a ledger record or is not
// idempotent (see newCall), so none is hedged.
func (c *call) hedgeable(h *hedging) bool {
	m := c.req.Method
	if !isIdempotent(m) || !h.writes && (m == http.MethodPut || m == http.MethodDelete) {
		return false
	}
	return c.led == nil && c.out.Key == "" && !c.traced
}

// sendHedged sends the call's next attempt: hedged when the call and the
// destination allow it, else as send does. Either way the destination's
// state learns how the attempt ended.
func (c *call) sendHedged() tried {
	h := c.p.hedge
	if h == nil {
		return c.send()
	}
	eligible := c.hedgeable(h)
	if eligible && c.out.Attempts == 0 && !c.numbered {
		if delay, ok := h.delayFor(c.dest); ok {
			return c.race(h, delay)
		}
	}
	start := c.p.clock.Now()
	a := c.send()
	if !a.bodyErr {
		h.observe(c.dest, a.cls.Class, c.p.clock.Now().Sub(start), eligible)
	}
	return a
}

// attemptCopy is one copy of a hedged attempt in flight.
type attemptCopy struct {
	req    *http.Request
	cancel context.CancelFunc // cancels the copy's context
	start  time.Time
}

// copyResult is what one copy of a hedged attempt got back.
type copyResult struct {
	i    int // 0 for the first attempt, 1 for the hedge
	resp *http.Response
	err  error
	end  time.Time
}

// race sends the first attempt and, when it has no answer after delay and
// admitHedge lets it, a hedge; it returns the first copy to succeed or be
// rejected (ClassBusiness is the provider's answer too), else the last to
// fail. The other copy, if still out, is cancelled: it is neither a
// failure nor retried.
func (c *call) race(h *hedging, delay time.Duration) tried {
	// results is unbuffered: once lost is closed, nobody receives, and a
	// copy that answers after that closes its own response.
	results := make(chan copyResult)
	lost := make(chan struct{})
	defer close(lost)
	var copies [2]attemptCopy
	if err := c.launch(&copies[0], 0, results, lost); err != nil {
		return tried{err: err, cancel: noCancel, bodyErr: true}
	}
	fire, stopTimer := c.hedgeTimer(delay)
	defer stopTimer()
	pending := 1
	select {
	case r := <-results:
		return c.copyAnswer(h, &copies[0], r)
	case <-fire:
	}
	ok, early := c.admitHedge(h, results)
	if early != nil {
		return c.copyAnswer(h, &copies[0], *early)
	}
	if ok && c.launch(&copies[1], 1, results, lost) == nil {
		pending = 2
	}
	hedges := pending - 1
	for {
		r := <-results
		pending--
		a := c.copyAnswer(h, &copies[r.i], r)
		a.hedges = hedges
		if pending == 0 || a.cls.Class == ClassSuccess || a.cls.Class == ClassBusiness {
			if pending > 0 {
				c.cancelCopy(h, &copies[1-r.i], 1-r.i)
			}
			return a
		}
		// The first copy to answer failed while the other is still out:
		// that one may yet succeed, so it is awaited, and this one is
		// reported as an attempt of its own.
		a.number = c.out.Attempts + 1
		c.report(&a)
		c.discard(a.resp)
		a.cancel()
	}
}

// launch sends copy i of the attempt on a goroutine of its own, which
// hands what it got to results or, once lost is closed, closes it itself.
func (c *call) launch(cp *attemptCopy, i int, results chan<- copyResult, lost <-chan struct{}) error {
	start := c.p.clock.Now()
	areq, _, cancel, err := c.newAttemptRequest(start)
	if err != nil {
		cancel()
		return err
	}
	// Each copy has a context of its own, so that the loser can be
	// cancelled: areq may otherwise carry the caller's context, or be the
	// caller's request itself (which WithContext copies, not changes).
	ctx, stop := context.WithCancel(areq.Context())
	areq = areq.WithContext(ctx)
	*cp = attemptCopy{req: areq, start: start, cancel: func() { stop(); cancel() }}
	base, clk := c.p.cfg.Base, c.p.clock
	go func() {
		resp, err := base.RoundTrip(areq)
		r := copyResult{i: i, resp: resp, err: err, end: clk.Now()}
		select {
		case results <- r:
		case <-lost:
			if resp != nil && resp.Body != nil {
				resp.Body.Close()
			}
		}
	}()
	return nil
}

// copyAnswer classifies what copy cp got back, and has the destination's
// state learn it.
func (c *call) copyAnswer(h *hedging, cp *attemptCopy, r copyResult) tried {
	a := c.classify(cp.req, nil, r.resp, r.err, cp.cancel, cp.start)
	a.hedge = r.i == 1
	h.observe(c.dest, a.cls.Class, r.end.Sub(cp.start), true)
	return a
}

// cancelCopy cancels copy i, which lost the race, and reports it to the
// Observer as an attempt cancelled, not failed. The first attempt's time so
// far is a latency the percentile counts: it is at least that slow, and
// past the hedge delay, so the percentile, which counts only how many
// latencies lie above it, stays true. A hedge that lost says nothing of
// the kind.
func (c *call) cancelCopy(h *hedging, cp *attemptCopy, i int) {
	cp.cancel()
	now := c.p.clock.Now()
	if i == 0 {
		h.censored(c.dest, now.Sub(cp.start))
	}
	if obs := c.p.cfg.Observer.Attempt; obs != nil {
		obs(AttemptEvent{Request: c.req, Route: c.p.routeName, Attempt: c.out.Attempts + 1, Key: c.out.Key,
			Class: ClassMaybeSent, Err: context.Canceled, Start: cp.start, Duration: now.Sub(cp.start),
			Hedge: i == 1, Canceled: true})
	}
}

// admitHedge decides whether the hedge may go, once the delay is over and
// the first attempt still has no answer: the call must have an attempt
// left and time before its deadline, its body must be replayable, and the
// destination's last attempt must not have failed; then the hedge spends
// a retry credit and waits on the limiter as a retry would. When the
// first attempt answers during that wait, it returns its result instead.
func (c *call) admitHedge(h *hedging, results <-chan copyResult) (bool, *copyResult) {
	select {
	case r := <-results:
		return false, &r
	default:
	}
	ctx := c.req.Context()
	switch {
	case ctx.Err() != nil,
		!c.deadline.IsZero() && !c.p.clock.Now().Before(c.deadline),
		c.out.Attempts+2 > c.p.cfg.MaxAttempts,
		!c.body.replayable(),
		h.failing(c.dest):
		return false, nil
	}
	if !c.withdraw() {
		return false, nil
	}
	if c.limit == nil {
		return true, nil
	}
	// The limiter is waited on here, on the caller's goroutine, where the
	// Observer expects its events; a watcher ends the wait when the first
	// attempt answers.
	wctx, stop := context.WithCancel(ctx)
	var early *copyResult
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case r := <-results:
			early = &r
			stop()
		case <-wctx.Done():
		}
	}()
	adm := c.limit.admit(wctx, c.deadline, c.waited)
	stop()
	<-watched
	if early != nil || adm.stop != nil {
		return false, early
	}
	c.waited = adm.waited
	return true, nil
}

// hedgeTimer closes the returned channel after d, through the Transport's
// clock; stop ends it early.
func (c *call) hedgeTimer(d time.Duration) (<-chan struct{}, context.CancelFunc) {
	ctx, stop := context.WithCancel(c.req.Context())
	fire := make(chan struct{})
	go func() {
		if c.p.clock.Sleep(ctx, d) == nil {
			close(fire)
		}
	}()
	return fire, stop
}
