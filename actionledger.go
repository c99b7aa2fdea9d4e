package retrybudget

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/retrybudget/retrybudget/internal/readahead"
	"github.com/retrybudget/retrybudget/ledger"
)

// ledgerGate is one call's part in the action ledger: it reserves the
// action before anything is sent, records each send, and settles the
// record when the call ends. It reports what it decided; the call loop
// writes the Outcome.
type ledgerGate struct {
	key ledger.Key
	// origin, for a redirect hop, is the action key derives from (see
	// redirect.go); zero otherwise.
	origin    ledger.Key
	cfg       *Config
	caller    *http.Request // for the fingerprint and the Observer
	routeName string        // for the Observer
	// keyed reports that the request carries an idempotency key: a 409
	// to it means "still in progress at the provider", never the answer.
	keyed bool
	// deadline is the call's deadline (zero when none) and clock its
	// time, to bound store calls (see storeContext).
	deadline time.Time
	clock    clock
	// token is the fencing token; zero while the call does not own the
	// action (nothing to record or settle).
	token int64
	// keeper renews the lease while the owning call runs; nil otherwise.
	keeper *ledger.Keeper
	// ownedAt is when the call was granted the action, on its clock, for
	// the usual run time of its tenant and operation (callTimes).
	ownedAt time.Time
	// lost reports that a fenced store call found the token no longer
	// current: another worker owns the action now.
	lost bool
	// lostErr is why the outcome's Complete was refused, when it was
	// (ledger.ErrNotOwner, or ErrOwnerShared), for the call's error.
	lostErr error
	// unsaved reports that the last answer is one the provider saved
	// nothing for (Classification.Unsaved): it is not the action's.
	unsaved bool
	// foldsMark asks the reservation to carry the sending mark
	// (ledger.ReserveRequest.Sending): the request is repeatable under a
	// key the destination honours, so a grant that dies before its send
	// is re-sent under the key, not held.
	foldsMark bool
	// marked reports that the grant wrote the mark for the first send
	// (ledger.Reservation.Sending); beforeSend clears it.
	marked bool
	// settlesAttempt reports that the store records the send Complete
	// and Fail carry (ledger.Reservation.SettlesAttempt).
	settlesAttempt bool
	// unrecorded is the class of the last send while it is not yet in
	// the action's history: it rides with the outcome, or is written on
	// its own before the next send (recordSend).
	unrecorded string
}

// reservation is the ledger's answer before the call sends anything: send
// it (the zero value: the call owns the action), answer with a stored
// outcome (replay), or end the call unsent (stop).
type reservation struct {
	// replay is the stored outcome of a completed action.
	replay *ledger.Outcome
	// stop is why the action must not be sent: ErrPending, ErrConflict,
	// ErrUncertain, ErrLedger or ErrBodyNotReplayable.
	stop error
	// cause is the store's or the ledger's error.
	cause error
	// retryAt, with ErrPending, is when the other call can have finished
	// (see callTimes.pendingWait), at the latest when its lease ends.
	retryAt time.Time
	// maybeApplied reports that an earlier call may have applied it: set
	// with a stop, and on a resend grant, which the call then owns.
	maybeApplied bool
}

// reserve looks the action up in the ledger and applies the matrix of
// ledger.Resolve to the request whose replayable body is body (bodyErr
// when it has none). now is the Transport's time, for retryAt.
func (g *ledgerGate) reserve(ctx context.Context, body []byte, bodyErr error, now time.Time) reservation {
	if bodyErr != nil {
		return reservation{stop: ErrBodyNotReplayable, cause: bodyErr}
	}
	cfg, req := g.cfg, g.caller
	rr := ledger.ReserveRequest{
		Key:          g.key,
		Fingerprint:  ledger.Fingerprint(req.Method, req.URL, req.Header, cfg.Ledger.Headers, body),
		Owner:        cfg.Ledger.Owner,
		Instance:     cfg.Ledger.instance,
		Lease:        cfg.Ledger.Lease,
		Reconciler:   cfg.Ledger.Reconciler != nil,
		KeysHonoured: cfg.KeysHonoured,
		// The nonce makes the request idempotent: sent again after a lost
		// reply, it gets its own grant back instead of being held by it.
		Nonce: ledger.NewNonce(),
		// beforeSend marks the action before every send, so a lease
		// that runs out before the first is provably unsent.
		MarksSending: true,
		// Or the grant carries the first mark, one round trip fewer,
		// where a grant that dies unsent is re-sent under the key.
		Sending: g.foldsMark,
		Settle:  cfg.SettleTime,
		// A request changed after an answer that left nothing behind (a
		// validation failure the provider saved nothing for) is the
		// action's corrected form: the failed record has no effect to
		// guard against it.
		ReplacesFailed: true,
	}
	res, err := g.reserveOnce(ctx, rr)
	if err != nil && ctx.Err() == nil && (g.deadline.IsZero() || g.clock.Now().Before(g.deadline)) {
		// The reply may have been lost after the store wrote the grant:
		// the same request finds it.
		res, err = g.reserveOnce(ctx, rr)
	}
	if err != nil {
		g.failed("reserve", err)
		if !g.deadline.IsZero() && !g.clock.Now().Before(g.deadline) {
			// The store took the call's time: nothing was sent.
			return reservation{stop: ErrDeadline, cause: err}
		}
		return reservation{stop: ErrLedger, cause: err}
	}
	if res.Verdict == ledger.VerdictResend && keyLapsed(cfg.KeyRetention, res.Record) {
		return g.lapsed(ctx, res)
	}
	g.decided(res.Verdict, res.Path, res.Expired)
	g.marked, g.settlesAttempt = res.Sending, res.SettlesAttempt
	switch res.Verdict {
	case ledger.VerdictCreated, ledger.VerdictRetry:
		g.own(ctx, res.Token)
		return reservation{}
	case ledger.VerdictResend:
		// An earlier call may have applied it: should this call end
		// before its own attempt says more (a limiter outage, the
		// deadline), the record must stay "maybe applied", never "failed,
		// no effect".
		g.own(ctx, res.Token)
		return reservation{maybeApplied: true}
	case ledger.VerdictReplayed:
		return reservation{replay: storedOutcome(res.Record.Outcome)}
	case ledger.VerdictReconcile:
		// The lease is renewed while the Reconciler runs: a Reconciler
		// slower than the lease must not let another worker take over.
		g.own(ctx, res.Token)
		return g.reconcile(ctx, res, now)
	case ledger.VerdictPending:
		wait := cfg.Ledger.calls.pendingWait(g.key, res)
		return reservation{stop: ErrPending, cause: res.Err(), retryAt: now.Add(max(wait, time.Millisecond))}
	case ledger.VerdictDelayed:
		return reservation{stop: ErrPending, cause: res.Err(), retryAt: now.Add(max(res.RetryAfter, time.Millisecond))}
	case ledger.VerdictConflict:
		return reservation{stop: ErrConflict, cause: res.Err()}
	default: // VerdictUncertain
		return reservation{stop: ErrUncertain, cause: res.Err(), maybeApplied: true}
	}
}

// reserveOnce sends one Reserve, bounded as every store call is.
func (g *ledgerGate) reserveOnce(ctx context.Context, rr ledger.ReserveRequest) (ledger.Reservation, error) {
	sctx, cancel := g.storeContext(ctx, false)
	defer cancel()
	return g.cfg.Ledger.Store.Reserve(sctx, rr)
}

// storedOutcome is o, or a bare 200 for a completed record without one.
func storedOutcome(o *ledger.Outcome) *ledger.Outcome {
	if o == nil {
		return &ledger.Outcome{Status: http.StatusOK}
	}
	return o
}

// keyLapsed reports whether the provider has forgotten the key of the
// action recorded in rec by the time of the re-send just granted, when it
// keeps a key for retention (Config.KeyRetention; zero means no known
// limit). The age is read on the store's clock, from the action's creation
// (before its first send, so the age is never understated) to the newest
// entry of its history, the grant itself; a record without those times
// cannot prove the key is still kept, so it counts as lapsed.
func keyLapsed(retention time.Duration, rec ledger.Record) bool {
	if retention <= 0 {
		return false
	}
	if rec.CreatedAt.IsZero() || len(rec.Attempts) == 0 {
		return true
	}
	return rec.Attempts[len(rec.Attempts)-1].At.Sub(rec.CreatedAt) >= retention
}

// keyLapsedStep is the step the ledger gate adds to a decision's path when
// it turns a re-send into an uncertain outcome because the key lapsed.
func keyLapsedStep(retention time.Duration) string {
	return "the destination keeps a key for " + retention.String() +
		" (Config.KeyRetention) and the action is older: a re-send under the key would be new work, so do not send: outcome uncertain"
}

// lapsed settles an action whose re-send res granted, but whose key the
// provider no longer keeps (see keyLapsed), as uncertain, fenced by the
// grant's token: nothing is sent, and the record says an effect is
// possible, for an operator or a Reconciler.
func (g *ledgerGate) lapsed(ctx context.Context, res ledger.Reservation) reservation {
	res.Verdict = ledger.VerdictUncertain
	res.Path = append(res.Path, keyLapsedStep(g.cfg.KeyRetention))
	g.decided(res.Verdict, res.Path, res.Expired)
	sctx, cancel := g.storeContext(ctx, true)
	defer cancel()
	f := ledger.Failure{EffectPossible: true, Reason: "the provider's key retention of " + g.cfg.KeyRetention.String() + " passed"}
	if err := g.cfg.Ledger.Store.Fail(sctx, g.key, res.Token, f); err != nil {
		g.failed("fail", err)
	}
	return reservation{stop: ErrUncertain, cause: res.Err(), maybeApplied: true}
}

// reconcile asks the configured Reconciler what became of an action whose
// owner died, granted reconciles it, and settles the record under token: a
// completed action is replayed, one that never happened is sent under the
// same key, an unknown one stays uncertain for an operator. "Never
// happened" inside the settle time of the action's last send
// (ledger.Reservation.Trust) is not trusted: the record stays uncertain
// and the call is told ErrPending with RetryAt at the settle time's end
// (now is the Transport's time of the reservation).
func (g *ledgerGate) reconcile(ctx context.Context, granted ledger.Reservation, now time.Time) reservation {
	// The Reconciler asks the provider: bounded like a store call, by the
	// call's deadline and storeTimeout, so a hung one holds neither the
	// call nor, through the lease kept meanwhile, the action.
	rctx, cancel := g.storeContext(ctx, false)
	rec := granted.Record
	if g.origin.Key != "" {
		// A redirect hop carries its action's request: the destination
		// knows the effect as the action's (a Marker of it in the body,
		// say), so the Reconciler is asked about that one.
		rec.Key = g.origin
	}
	found, err := g.cfg.Ledger.Reconciler(rctx, rec)
	cancel()
	res := granted.Trust(found)
	if err != nil {
		res = ledger.Resolution{State: ledger.StateUncertain, Reason: "reconciler failed"}
	}
	if g.lostLease() {
		// Another worker took the action over while the Reconciler ran:
		// its answer is that worker's to act on.
		cause := g.notOwner(ctx, "renew", ledger.ErrNotOwner)
		g.disown()
		return reservation{stop: ErrPending, cause: cause, retryAt: g.clock.Now().Add(g.lease())}
	}
	token := g.token
	switch res.State {
	case ledger.StateFailed:
		// The provider never acted, as far as the Reconciler can see: this
		// call owns the action, send it. Where keys are honoured that is
		// trusted inside the settle time too (a send under the key cannot
		// act twice), but a request sent earlier may still be applied: should
		// this call end before its own attempt, the record must stay "maybe
		// applied", never "failed, no effect".
		return reservation{maybeApplied: g.cfg.KeysHonoured && granted.Record.Sending}
	case ledger.StateCompleted:
		g.disown()
		sctx, cancel := g.storeContext(ctx, true)
		defer cancel()
		if serr := ledger.Settle(sctx, g.cfg.Ledger.Store, g.key, token, res); serr != nil {
			g.failed("complete", serr)
		}
		o := res.Outcome
		return reservation{replay: &o}
	}
	g.disown()
	sctx, cancel := g.storeContext(ctx, true)
	defer cancel()
	if serr := ledger.Settle(sctx, g.cfg.Ledger.Store, g.key, token, ledger.Resolution{State: ledger.StateUncertain, Reason: res.Reason}); serr != nil {
		g.failed("fail", serr)
	}
	if err == nil && found.State == ledger.StateFailed {
		// Not found while the provider may still apply the last send:
		// ask again once the settle time has passed.
		cause := &ledger.Error{Err: ledger.ErrPending, Key: g.key, Verdict: granted.Verdict, State: ledger.StateUncertain,
			RetryAfter: granted.RetryAfter, Path: append(slices.Clip(granted.Path), res.Reason)}
		return reservation{stop: ErrPending, cause: cause, retryAt: now.Add(max(granted.RetryAfter, time.Millisecond))}
	}
	return reservation{stop: ErrUncertain, cause: errors.Join(err, ledger.ErrUncertain), maybeApplied: true}
}

// own makes the call the action's owner under token, and renews the lease
// in the background for as long as the call runs, so a long attempt keeps
// its action; settle stops it.
func (g *ledgerGate) own(ctx context.Context, token int64) {
	g.token, g.ownedAt = token, g.clock.Now()
	g.keeper = ledger.KeepLease(ctx, g.cfg.Ledger.Store, g.key, token, g.cfg.Ledger.Lease)
}

// disown ends the call's ownership without settling: the keeper stops
// and settle records nothing.
func (g *ledgerGate) disown() {
	if g.keeper != nil {
		g.keeper.Stop()
	}
	g.token = 0
}

// lease is the lease the call reserved with, for a retry hint.
func (g *ledgerGate) lease() time.Duration {
	return cmp.Or(g.cfg.Ledger.Lease, ledger.DefaultLease)
}

// lostLease reports whether the call owned its action and lost it to
// another worker: a renewal or another fenced store call met a newer
// fencing token.
func (g *ledgerGate) lostLease() bool {
	if g.lost {
		return true
	}
	if g.keeper == nil {
		return false
	}
	select {
	case <-g.keeper.Lost():
		return true
	default:
		return false
	}
}

// delayed tells g that the call waited (on its limiter) between the grant
// and the send. A mark the grant carried went before the wait, so a worker
// that took the action over meanwhile would go unseen and both would send:
// the mark is written again, fenced, right before the send, as it is where
// the grant carries none. Folded, it would fence the send only before its
// wait, not before it leaves.
func (g *ledgerGate) delayed() { g.marked = false }

// beforeSend checks, right before each attempt, that the call still owns
// its action, and marks it as sending (fenced by the token, as the
// reservation promised). The mark is written before every attempt, not
// only the first: a worker that lost its action while it waited to retry
// (another live process took it over) learns it here, from the store,
// before it sends, rather than from its lease keeper a third of a lease
// later; and each mark starts the send's settle time. stop is nil when
// the attempt may go; ErrPending when another worker took the action over
// (nothing more is recorded: the record is that worker's); ErrLedger when
// the mark could not be written, and then nothing was sent and the action
// is failed with no effect possible, or left uncertain after an earlier
// attempt. The first attempt's mark is not written again when the grant
// carried it (marked) and the call went on to send without waiting.
func (g *ledgerGate) beforeSend(ctx context.Context) (stop, cause error) {
	if g.token == 0 {
		return nil, nil
	}
	if g.lostLease() {
		cause := g.notOwner(ctx, "renew", ledger.ErrNotOwner)
		g.disown()
		return ErrPending, cause
	}
	if g.marked {
		g.marked = false
		return nil, nil
	}
	sctx, cancel := g.storeContext(ctx, false)
	err := g.cfg.Ledger.Store.MarkSending(sctx, g.key, g.token)
	cancel()
	switch {
	case err == nil:
		return nil, nil
	case errors.Is(err, ledger.ErrNotOwner):
		err = g.notOwner(ctx, "mark sending", err)
		g.disown()
		return ErrPending, err
	}
	g.failed("mark sending", err)
	return ErrLedger, err
}

// attempt notes one send of class cls for the action's history. It is
// written with the outcome (settle) or, when another send follows, before
// it (recordSend): the success path's last send costs no round trip of its
// own.
func (g *ledgerGate) attempt(cls Class) {
	if g.token != 0 {
		g.unrecorded = cls.String()
	}
}

// recordSend writes the last send noted by attempt in the action's history,
// the fenced write between two sends, and reports whether the call still
// owns its action. A token found stale marks the lease lost, so no retry
// follows.
func (g *ledgerGate) recordSend(ctx context.Context) bool {
	if g.token == 0 || g.unrecorded == "" {
		return !g.lostLease()
	}
	cls := g.unrecorded
	g.unrecorded = ""
	sctx, cancel := g.storeContext(ctx, true)
	defer cancel()
	if _, err := g.cfg.Ledger.Store.AddAttempt(sctx, g.key, g.token, cls); err != nil {
		if errors.Is(err, ledger.ErrNotOwner) {
			g.lost = true
			g.notOwner(sctx, "attempt", err)
		} else {
			g.failed("attempt", err)
		}
	}
	return !g.lostLease()
}

// settleWait bounds how long settling waits for a completed action's body
// to arrive in order to store it; a slower body is stored as omitted.
const settleWait = time.Second

// settle records how the owned action ended, as out says, with resp the
// response returned to the caller, if any. The provider's answer (a
// success, or a business error the Transport did not retry) completes the
// action and will be replayed; anything else fails it, as uncertain when an
// attempt may have been applied. To store the body, it is read ahead (up to
// MaxBodyBuffer) while settle waits at most settleWait; the caller still
// gets the whole body, each byte as it arrives. An event stream is
// recorded without its body, at once.
func (g *ledgerGate) settle(ctx context.Context, out *Outcome, resp *http.Response) {
	if g.token == 0 {
		return
	}
	if g.keeper != nil {
		g.keeper.Stop()
	}
	sent := g.unrecorded // the last send rides with the outcome
	if !g.settlesAttempt {
		// A store that does not know the field: record it on its own.
		g.recordSend(ctx)
		sent = ""
	}
	ctx, cancel := g.storeContext(ctx, true) // record even if the caller gave up
	defer cancel()
	// However it ends, a duplicate held as pending may go on from here.
	g.cfg.Ledger.calls.observe(g.key, g.clock.Now().Sub(g.ownedAt))
	store := g.cfg.Ledger.Store
	answered := out.Reason == nil || out.Reason == ErrRejected
	// A keyed 409 is not the action's answer, and the request in
	// progress may apply it, unless the provider said it saved nothing
	// (Unsaved): then only an earlier attempt, counted in MaybeApplied,
	// may have acted.
	inFlight := inProgress(resp, g.keyed) && !g.unsaved
	if resp == nil || !answered || inFlight || g.unsaved || (out.Class != ClassSuccess && out.Class != ClassBusiness) {
		reason := "gave up"
		switch {
		case g.unsaved && resp != nil:
			reason = "the provider saved nothing for its answer, status " + strconv.Itoa(resp.StatusCode)
		case out.Reason != nil:
			reason = out.Reason.Error()
		}
		f := ledger.Failure{EffectPossible: out.MaybeApplied || inFlight, Reason: reason, AttemptClass: sent}
		if err := store.Fail(ctx, g.key, g.token, f); err != nil {
			g.notOwner(ctx, "fail", err)
		}
		return
	}
	o := ledger.Outcome{Status: resp.StatusCode, Header: resp.Header, BodyOmitted: true, BodyLen: -1, AttemptClass: sent}
	// An upgraded connection or an event stream is a stream, not a body to
	// store: settling does not wait for it, and the caller reads it as it
	// arrives.
	if resp.StatusCode != http.StatusSwitchingProtocols && !isEventStream(resp.Header) {
		wait := settleWait
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(dl))
		}
		limit := g.cfg.MaxBodyBuffer
		if limit < 0 {
			limit = DefaultMaxBodyBuffer // the stored answer is bounded on its own
		}
		if body, ok := readahead.Read(resp, limit, wait); ok {
			o.Body, o.BodyOmitted, o.BodyLen = body, false, 0
		}
	}
	if err := store.Complete(ctx, g.key, g.token, o); err != nil {
		err = g.notOwner(ctx, "complete", err)
		if errors.Is(err, ledger.ErrNotOwner) {
			g.lost, g.lostErr = true, err
		}
	}
}

// isEventStream reports a response of server-sent events (the WHATWG
// HTML standard's text/event-stream), which stays open as long as the
// server has events to send.
func isEventStream(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(headerValue(h, "Content-Type"))
	return mt == "text/event-stream"
}

// storeTimeout bounds one store call of the ledger gate, as the inbound
// middleware's reserveTimeout does: a hung store must not hold a call.
const storeTimeout = 5 * time.Second

// storeGrace is how long past the call's deadline a store call may still
// run to record what happened: settling a call whose provider answered
// just before the deadline should not fail for want of a millisecond.
const storeGrace = 50 * time.Millisecond

// storeContext returns the context of one store call, bounded by
// storeTimeout and by the call's deadlines (the context's and Config's).
// detach cuts it from ctx's cancellation and adds storeGrace, for calls
// that record what was sent: they must run even when the caller gave up,
// but never hold the call much past its deadline. A call cut off leaves the
// record as it was (in progress): its lease runs out, and the next call,
// Sweep or a Reconciler finds it.
func (g *ledgerGate) storeContext(ctx context.Context, detach bool) (context.Context, context.CancelFunc) {
	grace := time.Duration(0)
	if detach {
		grace = storeGrace
	}
	bound := storeTimeout
	if dl, ok := ctx.Deadline(); ok {
		bound = min(bound, max(time.Until(dl), 0)+grace)
	}
	if !g.deadline.IsZero() {
		bound = min(bound, max(g.deadline.Sub(g.clock.Now()), 0)+grace)
	}
	if detach {
		ctx = context.WithoutCancel(ctx)
	}
	return context.WithTimeout(ctx, bound)
}

// notOwner reports err, the failure of the fenced store call op, to the
// Observer and returns it; an ErrNotOwner is first explained when it can
// be: lost to another live process under this very Owner, it becomes
// ledger.ErrOwnerShared, so the misconfiguration shows in the logs (one
// Get, on this rare path only, and only with a stable Owner).
func (g *ledgerGate) notOwner(ctx context.Context, op string, err error) error {
	if g.cfg.Ledger.instance != "" && errors.Is(err, ledger.ErrNotOwner) {
		sctx, cancel := g.storeContext(ctx, true)
		err = ledger.CheckOwnerShared(sctx, g.cfg.Ledger.Store, g.key, g.cfg.Ledger.Owner, g.cfg.Ledger.instance, err)
		cancel()
	}
	g.failed(op, err)
	return err
}

// decided reports the reservation's verdict to the Observer.
func (g *ledgerGate) decided(v ledger.Verdict, path []string, expired bool) {
	if obs := g.cfg.Observer.Ledger; obs != nil {
		obs(LedgerEvent{Request: g.caller, Route: g.routeName, Action: g.key, Op: "reserve", Verdict: v, Path: path, Expired: expired})
	}
}

// failed reports a store operation op that failed with err to the
// Observer.
func (g *ledgerGate) failed(op string, err error) {
	if obs := g.cfg.Observer.Ledger; obs != nil {
		obs(LedgerEvent{Request: g.caller, Route: g.routeName, Action: g.key, Op: op, Err: err})
	}
}

// replayResponse builds the response of a stored outcome o, for req.
func replayResponse(req *http.Request, o *ledger.Outcome) *http.Response {
	body := o.Body
	if o.BodyOmitted {
		body = nil
	}
	resp := &http.Response{
		Status:     fmt.Sprintf("%d %s", o.Status, http.StatusText(o.Status)),
		StatusCode: o.Status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: o.Header.Clone(), Body: io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)), Request: req,
	}
	if resp.Header == nil {
		resp.Header = http.Header{}
	}
	return resp
}

// unsentClass is the class of a call the ledger kept from being sent: it
// says what kind of "no" it was.
func unsentClass(reason error) Class {
	switch reason {
	case ErrPending:
		return ClassCapacity // not now: another call holds it
	case ErrConflict:
		return ClassBusiness // the request itself is wrong
	case ErrUncertain:
		return ClassMaybeSent // an earlier call may have applied it
	}
	return ClassNotSent
}
