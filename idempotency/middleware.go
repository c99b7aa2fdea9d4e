package idempotency

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/ledger"
)

// New returns the middleware configured by cfg, whose zero fields take
// their documented defaults. Every handler it wraps shares cfg's store (or
// the one Memory store New creates when cfg.Store is nil).
func New(cfg Config) func(http.Handler) http.Handler {
	s := cfg.withDefaults()
	if _, ok := s.Store.(ledger.Atomic); s.Atomic && !ok {
		panic(errAtomicStore) // a wiring mistake, found at start-up rather than per request
	}
	return func(next http.Handler) http.Handler {
		return &guard{s: &s, next: next}
	}
}

// guard is one wrapped handler.
type guard struct {
	s    *settings
	next http.Handler
}

// ServeHTTP applies the replay matrix of the package documentation.
func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.s.methods[strings.ToUpper(r.Method)] {
		g.next.ServeHTTP(w, r)
		return
	}
	values := r.Header.Values(g.s.KeyHeader)
	if len(values) == 0 {
		if g.s.KeyOptional {
			g.next.ServeHTTP(w, r)
			return
		}
		problem{status: http.StatusBadRequest, typ: TypeMissingKey, title: "Idempotency key required",
			detail: fmt.Sprintf("%s %s requires the %s header.", r.Method, r.URL.EscapedPath(), g.s.KeyHeader)}.write(w)
		return
	}
	key, err := ParseKey(values, g.s.MaxKeyLength)
	if err != nil {
		problem{status: http.StatusBadRequest, typ: TypeMalformedKey, title: "Malformed idempotency key",
			detail: err.Error() + "."}.write(w)
		return
	}
	tenant, p := g.tenant(r)
	if p != nil {
		p.write(w)
		return
	}
	body, p := g.readBody(r)
	if p != nil {
		p.write(w)
		return
	}
	k := ledger.Key{Tenant: tenant, Operation: g.s.Operation(r), Key: key}
	// The reservation must not be cut by the client going away: a reply
	// lost after the store wrote the record would leave a key nobody owns.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), reserveTimeout)
	defer cancel()
	res, err := g.s.Store.Reserve(rctx, ledger.ReserveRequest{
		Key:          k,
		Fingerprint:  ledger.Fingerprint(r.Method, r.URL, r.Header, g.s.FingerprintHeaders, body),
		Owner:        g.s.Owner,
		Lease:        g.s.Lease,
		Retention:    g.s.Retention,
		KeysHonoured: g.s.RerunUncertain,
		// A reply lost after the store wrote the grant must not leave the
		// request held by itself: a re-send finds its own grant by the
		// nonce, and a grant never marked as running is provably unrun.
		Nonce:        ledger.NewNonce(),
		MarksSending: true,
	})
	switch {
	case errors.Is(err, ledger.ErrTenantFull):
		full(http.StatusTooManyRequests, err).write(w)
		return
	case errors.Is(err, ledger.ErrFull):
		g.log(r.Context(), "reserve", k, err)
		full(http.StatusServiceUnavailable, err).write(w)
		return
	case err != nil:
		g.log(r.Context(), "reserve", k, err)
		unavailable().write(w)
		return
	}
	if res.Expired && g.s.Logger != nil {
		// The expiry event: the key's earlier action outlived its
		// retention, and this request runs as a new one.
		g.s.Logger.LogAttrs(r.Context(), slog.LevelInfo, "idempotency: key expired, running as a new action",
			g.actionAttr(k)...)
	}
	switch res.Verdict {
	case ledger.VerdictCreated, ledger.VerdictRetry, ledger.VerdictResend:
		start := g.s.Now()
		g.run(w, r, k, res.Token, res.Record.CreatedAt, body)
		g.s.typical.observe(k.Tenant, k.Operation, g.s.Now().Sub(start))
	case ledger.VerdictReplayed:
		if res.Record.Outcome == nil {
			g.log(r.Context(), "replay", k, ledger.ErrCorrupt)
			unavailable().write(w)
			return
		}
		writeReplay(w, res.Record.Outcome)
	case ledger.VerdictPending:
		pending(g.s.typical.pendingWait(k, res, g.s.Now(), g.s.PendingRetryAfter)).write(w)
	case ledger.VerdictConflict:
		problem{status: http.StatusUnprocessableEntity, typ: TypeConflict, title: "Idempotency key reused",
			detail: "This idempotency key was used for a different request; use a new key for a new request."}.write(w)
	default:
		// VerdictUncertain, and defensively anything this version does
		// not know: never run what cannot be classified. VerdictDelayed
		// and VerdictReconcile cannot occur, since Reserve is never told
		// of a rate limit or a reconciler.
		if res.Verdict.Owns() {
			g.fail(r.Context(), k, res.Token, true, "middleware cannot act on verdict "+res.Verdict.String())
		}
		problem{status: http.StatusConflict, typ: TypeUncertain, title: "Outcome uncertain",
			detail: "An earlier request with this idempotency key may have taken effect but left no response; it needs an operator. Do not retry under a new key."}.write(w)
	}
}

// reserveTimeout bounds each store call that no longer follows the
// client's context: the reservation, and recording how the handler ended.
const reserveTimeout = 5 * time.Second

// tenant returns the request's tenant, or the problem to answer when there
// is none: a guarded request never runs under an empty tenant, which every
// unidentified caller would share.
func (g *guard) tenant(r *http.Request) (string, *problem) {
	if g.s.Tenant == nil {
		return "", &problem{status: http.StatusInternalServerError, typ: TypeNoTenant, title: "Idempotency tenant not configured",
			detail: "The service guards this route without a way to tell its callers apart (idempotency.Config.Tenant is nil), so it refuses requests rather than let callers share idempotency keys."}
	}
	t := g.s.Tenant(r)
	if t == "" {
		return "", &problem{status: http.StatusForbidden, typ: TypeNoTenant, title: "Caller not identified",
			detail: "A request with an idempotency key must come from an identified caller; this one has none."}
	}
	return t, nil
}

// readBody reads the request body whole, for the fingerprint, or returns
// the problem to answer.
func (g *guard) readBody(r *http.Request) ([]byte, *problem) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	limit := g.s.MaxRequestBody
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	switch {
	case err != nil:
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, tooLarge(limit)
		}
		return nil, &problem{status: http.StatusBadRequest, typ: TypeBodyUnreadable, title: "Request body unreadable",
			detail: "The request body could not be read to its end."}
	case int64(len(body)) > limit:
		return nil, tooLarge(limit)
	}
	return body, nil
}

// run runs the handler as the action's owner and records how it ended.
func (g *guard) run(w http.ResponseWriter, r *http.Request, k ledger.Key, token int64, generation time.Time, body []byte) {
	// The mark comes before the handler's first effect: a record without
	// it whose lease ran out was never run, and runs again at once. Without
	// the mark the handler must not run.
	mctx, cancelMark := context.WithTimeout(context.WithoutCancel(r.Context()), reserveTimeout)
	err := g.s.Store.MarkSending(mctx, k, token)
	cancelMark()
	if err != nil {
		g.log(r.Context(), "mark sending", k, err)
		fctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), reserveTimeout)
		defer cancel()
		g.fail(fctx, k, token, false, "could not mark the action as running")
		unavailable().write(w)
		return
	}
	in := &inbound{action: k, generation: generation}
	// The handler's context ends if another instance takes the action over
	// (this one's lease was lost): it must not go on acting for it.
	hctx, stopHandler := context.WithCancel(r.Context())
	defer stopHandler()
	ctx := retrybudget.WithAction(context.WithValue(hctx, inboundCtxKey{}, in), in.action)
	atx, ok := g.beginAtomic(w, r, k, token)
	if !ok {
		return
	}
	if atx != nil {
		in.atx = atx
		ctx = atx.Context(ctx)
	}
	r2 := r.WithContext(ctx)
	r2.Body, r2.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	r2.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }

	// The store is written even when the client has gone: the handler
	// may have had its effect, and the record must say so.
	sctx := context.WithoutCancel(r.Context())
	keeper := ledger.KeepLease(sctx, g.s.Store, k, token, g.s.Lease)
	go func() {
		select {
		case <-keeper.Lost():
			stopHandler()
		case <-hctx.Done():
		}
	}()
	c := newCapture(w, g.s.MaxResponseBody)
	returned := false
	defer func() {
		if returned {
			return
		}
		// A panic, or runtime.Goexit. Record it, then let it go on to
		// net/http (or an outer recovery middleware), which aborts the
		// response as it would without us.
		p := recover()
		g.stopKeeper(sctx, k, keeper)
		wctx, cancel := context.WithTimeout(sctx, reserveTimeout)
		defer cancel()
		effect := in.effect.Load()
		if atx != nil {
			// The transaction's effects go with it; one the handler
			// marked happened outside it and remains.
			g.rollback(wctx, k, atx)
		} else if c.streaming && !failed(c.status) {
			// The client was already told the action's answer (a
			// flush, or a body past MaxResponseBody): the handler may
			// have had its effect, so the key must not run again.
			effect = true
		}
		g.fail(wctx, k, token, effect, "handler panicked")
		if p != nil {
			panic(p)
		}
	}()
	g.next.ServeHTTP(c, r2)
	returned = true
	g.stopKeeper(sctx, k, keeper)

	// Bounded: a hung store must not hold the response back for ever.
	wctx, cancel := context.WithTimeout(sctx, reserveTimeout)
	defer cancel()
	o := c.outcome()
	if failed(o.Status) && !c.streaming {
		// A step held by another server was not called by this run: the
		// action is pending, not failed, until that server's lease ends.
		// In Atomic mode the run's own writes are rolled back first.
		if until, held := g.heldStep(wctx, in); held {
			if atx != nil {
				g.rollback(wctx, k, atx)
			}
			if g.holdUntil(wctx, w, k, token, until) {
				return
			}
		}
	}
	if atx != nil {
		if !g.settleAtomic(wctx, k, token, atx, o, in.effect.Load()) && !c.streaming {
			unavailable().write(w)
			return
		}
	} else if failed(o.Status) {
		g.fail(wctx, k, token, in.effect.Load(), fmt.Sprintf("handler answered %d", o.Status))
	} else if err := g.s.Store.Complete(wctx, k, token, o); err != nil {
		g.log(sctx, "complete", k, err)
	}
	// Delivered after the record is written, so that a client holding the
	// response finds the action completed. A streamed response is already
	// out; see capture.
	if err := c.deliver(); err != nil {
		g.log(sctx, "deliver", k, err)
	}
}

// failed reports whether a handler's status means it did not perform the
// action, so the same key may run again: a server error (5xx), or a
// refusal that RFC 9110 and RFC 6585 define as "not processed, try later"
// (408 Request Timeout, 425 Too Early, 429 Too Many Requests). Every other
// status is the action's answer and is replayed.
func failed(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests:
		return true
	}
	return status >= 500
}

// fail gives the action up: failed (the key may run again) unless the
// handler marked an effect, then uncertain.
func (g *guard) fail(ctx context.Context, k ledger.Key, token int64, effect bool, reason string) {
	if err := g.s.Store.Fail(ctx, k, token, ledger.Failure{EffectPossible: effect, Reason: reason}); err != nil {
		g.log(ctx, "fail", k, err)
	}
}

// stopKeeper stops lease renewal and reports a renewal failure.
func (g *guard) stopKeeper(ctx context.Context, k ledger.Key, kp *ledger.Keeper) {
	err := kp.Stop()
	if err == nil {
		select {
		case <-kp.Lost():
			err = ledger.ErrNotOwner
		default:
		}
	}
	if err != nil {
		g.log(ctx, "renew", k, err)
	}
}

// log reports a ledger failure. The action is named as
// Config.Identities says: the raw key and tenant may be sensitive.
func (g *guard) log(ctx context.Context, op string, k ledger.Key, err error) {
	if g.s.Logger == nil {
		return
	}
	g.s.Logger.LogAttrs(ctx, slog.LevelWarn, "idempotency: ledger "+op+" failed",
		append(g.actionAttr(k), slog.String("error", err.Error()))...)
}

// actionAttr returns the "action" attribute naming k, or none when
// Config.Identities names no action.
func (g *guard) actionAttr(k ledger.Key) []slog.Attr {
	if id := g.s.Identities.ActionID(k); id != "" {
		return []slog.Attr{slog.String("action", id)}
	}
	return nil
}
