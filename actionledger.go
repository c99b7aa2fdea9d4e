package retrybudget

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// ledgerCall is one call's part in the action ledger.
type ledgerCall struct {
	key ledger.Key
	// token is the fencing token; zero while the call does not own the
	// action.
	token int64
	// keeper renews the lease while the owning call runs; nil otherwise.
	keeper *ledger.Keeper
}

// LedgerEvent describes one action ledger decision or failure.
type LedgerEvent struct {
	// Request is the caller's request.
	Request *http.Request
	// Route names the Route that matched the request; empty when none did.
	Route string
	// Action is the action.
	Action Action
	// Verdict is the ledger's decision, such as "created", "replayed",
	// "pending", "conflict", "uncertain", "resend" or "reconcile"; or the
	// store operation that failed ("complete", "fail", "attempt", "renew").
	Verdict string
	// Path is the decision path in words, from ledger.Resolve.
	Path []string
	// Err is the store's error, if any.
	Err error
}

// defaultLedgerOwner names this process in ledger records.
func defaultLedgerOwner() string {
	host, _ := os.Hostname()
	return host + ":" + strconv.Itoa(os.Getpid())
}

// reserve looks the call's action up in the ledger and applies the matrix
// of ledger.Resolve. It returns done with the call's result when the action
// must not be sent: a replay, a pending or conflicting action, an uncertain
// one. Otherwise the call owns the action and sends it.
func (c *call) reserve() (resp *http.Response, err error, done bool) {
	ctx := c.req.Context()
	body, err := c.body.content(c.t.cfg.MaxBodyBuffer)
	if err != nil {
		return c.ledgerStop(ErrBodyNotReplayable, err)
	}
	cfg := &c.t.cfg
	res, err := cfg.Ledger.Reserve(ctx, ledger.ReserveRequest{
		Key:          c.led.key,
		Fingerprint:  ledger.Fingerprint(c.req.Method, c.req.URL, c.req.Header, cfg.LedgerHeaders, body),
		Owner:        cfg.LedgerOwner,
		Lease:        cfg.LedgerLease,
		Reconciler:   cfg.Reconciler != nil,
		KeysHonoured: cfg.KeysHonoured,
	})
	if err != nil {
		c.ledgerEvent("reserve", nil, err)
		return c.ledgerStop(ErrLedger, err)
	}
	c.ledgerEvent(res.Verdict.String(), res.Path, nil)
	c.led.token = res.Token
	switch res.Verdict {
	case ledger.VerdictCreated, ledger.VerdictRetry, ledger.VerdictResend:
		c.keepLease()
		return nil, nil, false
	case ledger.VerdictReplayed:
		return c.replay(res.Record.Outcome), nil, true
	case ledger.VerdictReconcile:
		return c.reconcile(res.Record)
	case ledger.VerdictPending, ledger.VerdictDelayed:
		c.out.RetryAt = c.t.clock.Now().Add(max(res.RetryAfter, time.Millisecond))
		return c.ledgerStop(ErrPending, res.Err())
	case ledger.VerdictConflict:
		return c.ledgerStop(ErrConflict, res.Err())
	default: // VerdictUncertain
		c.out.MaybeApplied = true
		return c.ledgerStop(ErrUncertain, res.Err())
	}
}

// reconcile asks the configured Reconciler what became of an action whose
// owner died, and settles the record: a completed action is replayed, one
// that never happened is sent under the same key, an unknown one stays
// uncertain for an operator.
func (c *call) reconcile(rec ledger.Record) (*http.Response, error, bool) {
	ctx := c.req.Context()
	res, err := c.t.cfg.Reconciler(ctx, rec)
	if err != nil {
		res = ledger.Resolution{State: ledger.StateUncertain, Reason: "reconciler failed"}
	}
	switch res.State {
	case ledger.StateFailed:
		// The provider never acted: this call owns the action, send it.
		c.keepLease()
		return nil, nil, false
	case ledger.StateCompleted:
		if serr := ledger.Settle(ctx, c.t.cfg.Ledger, c.led.key, c.led.token, res); serr != nil {
			c.ledgerEvent("complete", nil, serr)
		}
		o := res.Outcome
		return c.replay(&o), nil, true
	}
	if serr := ledger.Settle(ctx, c.t.cfg.Ledger, c.led.key, c.led.token, ledger.Resolution{State: ledger.StateUncertain, Reason: res.Reason}); serr != nil {
		c.ledgerEvent("fail", nil, serr)
	}
	c.out.MaybeApplied = true
	return c.ledgerStop(ErrUncertain, errors.Join(err, ledger.ErrUncertain))
}

// ledgerStop ends a call the ledger kept from being sent.
func (c *call) ledgerStop(reason, cause error) (*http.Response, error, bool) {
	c.led.token = 0 // nothing to settle
	// Nothing was sent by this call: the class says what kind of "no".
	switch reason {
	case ErrPending:
		c.out.Class = ClassCapacity // not now: another call holds it
	case ErrConflict:
		c.out.Class = ClassBusiness // the request itself is wrong
	case ErrUncertain:
		c.out.Class = ClassMaybeSent // an earlier call may have applied it
	default:
		c.out.Class = ClassNotSent
	}
	resp, err := c.giveUp(nil, cause, reason, func() {})
	return resp, err, true
}

// replay builds the stored response of a completed action.
func (c *call) replay(o *ledger.Outcome) *http.Response {
	if o == nil {
		o = &ledger.Outcome{Status: http.StatusOK}
	}
	body := o.Body
	if o.BodyOmitted {
		body = nil
	}
	resp := storedResponse(c.req, o.Status, o.Header, body)
	c.out.Replayed, c.out.BodyOmitted = true, o.BodyOmitted
	c.out.Class, c.out.StatusCode = ClassifyStatus(o.Status), o.Status
	if c.out.Class != ClassSuccess {
		c.out.Reason = ErrRejected
	}
	return c.attach(resp, func() {})
}

// keepLease renews the owned action's lease in the background for as long
// as the call runs, so a long attempt keeps its action; settle stops it.
func (c *call) keepLease() {
	c.led.keeper = ledger.KeepLease(c.req.Context(), c.t.cfg.Ledger, c.led.key, c.led.token, c.t.cfg.LedgerLease)
}

// lostLease reports whether the call owned its action and lost the lease
// to another worker (its renewal met a newer fencing token).
func (c *call) lostLease() bool {
	if c.led == nil || c.led.keeper == nil {
		return false
	}
	select {
	case <-c.led.keeper.Lost():
		return true
	default:
		return false
	}
}

// ledgerAttempt records one send in the action's history.
func (c *call) ledgerAttempt(cls Class) {
	if c.led == nil || c.led.token == 0 {
		return
	}
	if _, err := c.t.cfg.Ledger.AddAttempt(c.req.Context(), c.led.key, c.led.token, cls.String()); err != nil {
		c.ledgerEvent("attempt", nil, err)
	}
}

// settleWait bounds how long settling waits for a completed action's body
// to arrive in order to store it; a slower body is stored as omitted.
const settleWait = time.Second

// settle records how the owned action ended. The provider's answer (a
// success, or a business error the Transport did not retry) completes the
// action and will be replayed; anything else fails it, as uncertain when an
// attempt may have been applied. To store the body, it is read ahead (up to
// MaxBodyBuffer) while settle waits at most settleWait; the caller still
// gets the whole body.
func (c *call) settle(resp *http.Response) {
	if c.led == nil || c.led.token == 0 {
		return
	}
	if c.led.keeper != nil {
		c.led.keeper.Stop()
	}
	ctx := context.WithoutCancel(c.req.Context()) // record even if the caller gave up
	store := c.t.cfg.Ledger
	answered := c.out.Reason == nil || c.out.Reason == ErrRejected
	if resp == nil || !answered || (c.out.Class != ClassSuccess && c.out.Class != ClassBusiness) {
		reason := "gave up"
		if c.out.Reason != nil {
			reason = c.out.Reason.Error()
		}
		if err := store.Fail(ctx, c.led.key, c.led.token, ledger.Failure{EffectPossible: c.out.MaybeApplied, Reason: reason}); err != nil {
			c.ledgerEvent("fail", nil, err)
		}
		return
	}
	o := ledger.Outcome{Status: resp.StatusCode, Header: resp.Header, BodyOmitted: true, BodyLen: -1}
	// An upgraded connection is a stream, not a body to store.
	if resp.StatusCode != http.StatusSwitchingProtocols {
		if body, ok := ReadAhead(resp, c.t.cfg.MaxBodyBuffer, settleWait); ok {
			o.Body, o.BodyOmitted, o.BodyLen = body, false, 0
		}
	}
	if err := store.Complete(ctx, c.led.key, c.led.token, o); err != nil {
		c.ledgerEvent("complete", nil, err)
	}
}

// ledgerEvent reports to the Observer.
func (c *call) ledgerEvent(verdict string, path []string, err error) {
	if obs := c.t.cfg.Observer.Ledger; obs != nil {
		obs(LedgerEvent{Request: c.req, Route: c.t.route, Action: Action(c.led.key), Verdict: verdict, Path: path, Err: err})
	}
}
