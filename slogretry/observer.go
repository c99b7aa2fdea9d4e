package slogretry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"github.com/retrybudget/retrybudget"
	"log/slog"
	"net/http"

	"github.com/retrybudget/retrybudget/internal/redact"
	"github.com/retrybudget/retrybudget/ledger"
)

// Observer returns a retrybudget.Observer that writes the Transport's events to
// logger as structured records. A nil logger means silent: the zero Observer,
// which costs nothing per call.
//
// Levels: attempts, allowed budget decisions, rate limiter waits and the
// ledger's created and retry verdicts at Debug; retries, boundary cooldowns,
// the other ledger verdicts and an expired action run anew (expired=true) at
// Info; give-ups, refused retries and the ledger's conflict and uncertain
// verdicts at Warn; ledger store failures at Error. A ledger sweep (the
// Sweep field) is one record with its counts, at Debug when it found
// nothing, Warn when it found stuck or uncertain actions, Error when it
// failed, then one record per stuck action with its state, owner and what
// reconciling it did: Warn, or Info once it was settled as completed or
// failed. Each record carries the request's method, host (the URL host) and
// path, then the event's own attributes: attempt, attempts, key (the
// idempotency key, when identities are shown), class, status,
// duration, error, delay, retry_after, reason, retry_at, maybe_applied,
// destination, boundary, wait, until, and for the ledger operation, action,
// verdict, op and decision (and tenant and key, the Action's, when
// identities are shown). "action" names the action as
// retrybudget.Identities.ActionID says (left out unless identities are shown or an
// ActionKey is set), the one rule the inbound middleware (idempotency)
// follows too, so an operator can match both logs.
//
// Credentials stay out of the logs: no header is logged (Authorization,
// Cookie and API-key headers among them), nor any body, query string, URL
// userinfo or RFC 9457 problem details, and a transport error is logged
// without the URL that a *url.Error carries. The path is logged unless
// ids.OmitPath is set: set it when a provider puts a secret in the path
// (webhook URLs, bot tokens).
//
// Records are logged with the request's context, so a handler can add trace
// and span IDs from it.
//
// Tenants, action keys, idempotency keys and the credential part of
// limiter boundaries and budget destinations are left out unless ids.ShowIdentities is set (see
// retrybudget.Identities); at most one ids is used.
func Observer(logger *slog.Logger, ids ...retrybudget.Identities) retrybudget.Observer {
	if logger == nil {
		return retrybudget.Observer{}
	}
	l := logObserver{logger: logger}
	if len(ids) > 0 {
		l.ids = ids[0]
	}
	return retrybudget.Observer{
		Attempt:  l.attempt,
		Retry:    l.retry,
		GiveUp:   l.giveUp,
		Budget:   l.budget,
		Limited:  l.limited,
		Cooldown: l.cooldown,
		Ledger:   l.ledger,
		Sweep:    l.sweep,
	}
}

// logObserver logs one kind of event per method; Observer wires each
// method to its retrybudget.Observer field, so a new event is one method and one line.
type logObserver struct {
	logger *slog.Logger
	ids    retrybudget.Identities
}

func (l logObserver) attempt(ev retrybudget.AttemptEvent) {
	ctx, ok := l.enabled(ev.Request, slog.LevelDebug)
	if !ok {
		return
	}
	attrs := make([]slog.Attr, 0, 12)
	attrs = l.appendRequestAttrs(attrs, ev.Request)
	attrs = append(attrs, slog.Int("attempt", ev.Attempt))
	attrs = appendKey(attrs, l.ids.Value(ev.Key))
	attrs = append(attrs, slog.String("class", ev.Class.String()))
	if ev.StatusCode != 0 {
		attrs = append(attrs, slog.Int("status", ev.StatusCode))
	}
	attrs = append(attrs, slog.Duration("duration", ev.Duration))
	if ev.Err != nil {
		attrs = append(attrs, slog.String("error", redact.ErrorText(ev.Err)))
	}
	if ev.Hedge {
		attrs = append(attrs, slog.Bool("hedge", true))
	}
	if ev.Canceled {
		// The copy of a hedged attempt that lost the race: its class and
		// error say it was cancelled, not that it failed.
		attrs = append(attrs, slog.Bool("canceled", true))
	}
	l.logger.LogAttrs(ctx, slog.LevelDebug, "retrybudget: attempt", attrs...)
}

func (l logObserver) retry(ev retrybudget.RetryEvent) {
	ctx, ok := l.enabled(ev.Request, slog.LevelInfo)
	if !ok {
		return
	}
	attrs := make([]slog.Attr, 0, 8)
	attrs = l.appendRequestAttrs(attrs, ev.Request)
	attrs = append(attrs, slog.Int("attempt", ev.Attempt))
	attrs = appendKey(attrs, l.ids.Value(ev.Key))
	attrs = append(attrs, slog.String("class", ev.Class.String()), slog.Duration("delay", ev.Delay))
	if ev.RetryAfter > 0 {
		attrs = append(attrs, slog.Duration("retry_after", ev.RetryAfter))
	}
	l.logger.LogAttrs(ctx, slog.LevelInfo, "retrybudget: retry", attrs...)
}

// giveUp logs the Outcome without its Problem: problem details come from
// the response body, which may echo what the caller sent.
func (l logObserver) giveUp(ev retrybudget.GiveUpEvent) {
	ctx, ok := l.enabled(ev.Request, slog.LevelWarn)
	if !ok {
		return
	}
	o := ev.Outcome
	attrs := make([]slog.Attr, 0, 11)
	attrs = l.appendRequestAttrs(attrs, ev.Request)
	attrs = append(attrs, slog.Int("attempts", o.Attempts))
	attrs = appendKey(attrs, l.ids.Value(o.Key))
	attrs = append(attrs, slog.String("class", o.Class.String()))
	if o.StatusCode != 0 {
		attrs = append(attrs, slog.Int("status", o.StatusCode))
	}
	if o.Reason != nil {
		attrs = append(attrs, slog.String("reason", o.Reason.Error()))
	}
	if !o.RetryAt.IsZero() {
		attrs = append(attrs, slog.Time("retry_at", o.RetryAt))
	}
	attrs = append(attrs, slog.Bool("maybe_applied", o.MaybeApplied))
	l.logger.LogAttrs(ctx, slog.LevelWarn, "retrybudget: give up", attrs...)
}

func (l logObserver) budget(ev retrybudget.BudgetEvent) {
	level, msg := slog.LevelDebug, "retrybudget: retry budget allowed a retry"
	if !ev.Decision.Allowed {
		level, msg = slog.LevelWarn, "retrybudget: retry budget refused a retry"
	}
	ctx, ok := l.enabled(ev.Request, level)
	if !ok {
		return
	}
	attrs := make([]slog.Attr, 0, 8)
	attrs = l.appendRequestAttrs(attrs, ev.Request)
	attrs = append(attrs,
		slog.String("destination", l.ids.Boundary(ev.Destination)),
		slog.Int64("deposits", ev.Decision.Deposits),
		slog.Int64("retries", ev.Decision.Retries),
		slog.Float64("ratio", ev.Decision.Ratio()),
	)
	if ev.Decision.Fallback {
		attrs = append(attrs, slog.Bool("fallback", true))
	}
	l.logger.LogAttrs(ctx, level, msg, attrs...)
}

// limited logs the limiter's boundary as retrybudget.Identities allow: without a
// credential hash by default.
func (l logObserver) limited(ev retrybudget.LimitEvent) {
	ctx, ok := l.enabled(ev.Request, slog.LevelDebug)
	if !ok {
		return
	}
	attrs := make([]slog.Attr, 0, 8)
	attrs = l.appendRequestAttrs(attrs, ev.Request)
	attrs = append(attrs, slog.String("boundary", l.ids.Boundary(ev.Boundary)), slog.Duration("wait", ev.Wait))
	if ev.Decision.Reason != "" {
		attrs = append(attrs, slog.String("reason", string(ev.Decision.Reason)))
	}
	if !ev.Decision.CooldownUntil.IsZero() {
		attrs = append(attrs, slog.Time("until", ev.Decision.CooldownUntil))
	}
	if ev.Decision.Fallback {
		attrs = append(attrs, slog.Bool("fallback", true))
	}
	l.logger.LogAttrs(ctx, slog.LevelDebug, "retrybudget: rate limiter wait", attrs...)
}

func (l logObserver) cooldown(ev retrybudget.LimitEvent) {
	ctx, ok := l.enabled(ev.Request, slog.LevelInfo)
	if !ok {
		return
	}
	attrs := make([]slog.Attr, 0, 5)
	attrs = l.appendRequestAttrs(attrs, ev.Request)
	attrs = append(attrs, slog.String("boundary", l.ids.Boundary(ev.Boundary)), slog.Time("until", ev.Until))
	l.logger.LogAttrs(ctx, slog.LevelInfo, "retrybudget: boundary cooldown", attrs...)
}

// ledgerLevel returns the level of a ledger verdict. A conflict or an
// uncertain action needs a person or a reconciler; a created or retried
// action is routine; the others (replayed, pending, delayed, resend,
// reconcile) are worth seeing.
func ledgerLevel(v ledger.Verdict) slog.Level {
	switch v {
	case ledger.VerdictCreated, ledger.VerdictRetry:
		return slog.LevelDebug
	case ledger.VerdictConflict, ledger.VerdictUncertain:
		return slog.LevelWarn
	}
	return slog.LevelInfo
}

// ledger logs a ledger decision, or a store failure at Error: a record that
// could not be written is an action the ledger may not protect.
func (l logObserver) ledger(ev retrybudget.LedgerEvent) {
	level, msg := ledgerLevel(ev.Verdict), "retrybudget: ledger decision"
	if ev.Expired {
		// The expiry event: the same key ran once before, past retention.
		level = max(level, slog.LevelInfo)
	}
	if ev.Err != nil {
		level, msg = slog.LevelError, "retrybudget: ledger store failed"
	}
	ctx, ok := l.enabled(ev.Request, level)
	if !ok {
		return
	}
	attrs := make([]slog.Attr, 0, 10)
	attrs = l.appendRequestAttrs(attrs, ev.Request)
	attrs = l.appendAction(attrs, ev.Action)
	if ev.Err != nil {
		attrs = append(attrs, slog.String("op", ev.Op), slog.String("error", redact.ErrorText(ev.Err)))
	} else {
		attrs = append(attrs, slog.String("verdict", ev.Verdict.String()))
	}
	if ev.Expired {
		attrs = append(attrs, slog.Bool("expired", true))
	}
	if len(ev.Path) > 0 {
		attrs = append(attrs, slog.Any("decision", ev.Path))
	}
	l.logger.LogAttrs(ctx, level, msg, attrs...)
}

// appendAction appends an action's operation and its "action" as
// retrybudget.Identities.ActionID names it (the rule the inbound middleware follows
// too), and its tenant and key only when identities are shown.
func (l logObserver) appendAction(attrs []slog.Attr, k ledger.Key) []slog.Attr {
	attrs = append(attrs, slog.String("operation", k.Operation))
	if id := l.ids.ActionID(k); id != "" {
		attrs = append(attrs, slog.String("action", id))
	}
	if l.ids.ShowIdentities {
		attrs = append(attrs, slog.String("tenant", k.Tenant), slog.String("action_key", k.Key))
	}
	return attrs
}

// enabled returns the request's context and whether logger wants records
// of level. Every method asks first, before building attributes: Debug
// events come with every attempt and are usually disabled.
func (l logObserver) enabled(req *http.Request, level slog.Level) (context.Context, bool) {
	ctx := context.Background()
	if req != nil {
		ctx = req.Context()
	}
	return ctx, l.logger.Enabled(ctx, level)
}

// appendRequestAttrs appends the request's method, host and path (unless
// retrybudget.Identities.OmitPath). The query string and userinfo are left out because
// they can carry credentials (?api_key=..., https://user:password@host).
func (l logObserver) appendRequestAttrs(attrs []slog.Attr, req *http.Request) []slog.Attr {
	if req == nil {
		return attrs
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet // net/http: an empty Method means GET
	}
	attrs = append(attrs, slog.String("method", method))
	if req.URL != nil {
		attrs = append(attrs, slog.String("host", req.URL.Host))
		if !l.ids.OmitPath {
			attrs = append(attrs, slog.String("path", req.URL.Path))
		}
	}
	return attrs
}

func appendKey(attrs []slog.Attr, key string) []slog.Attr {
	if key == "" {
		return attrs
	}
	sum := sha256.Sum256([]byte(key))
	return append(attrs, slog.String("key", hex.EncodeToString(sum[:8])))
}
