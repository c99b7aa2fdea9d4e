// Package otelretry reports a retrybudget Transport's events as OpenTelemetry
// metrics and spans. It lives apart from package retrybudget so that the core
// never imports OpenTelemetry: only programs that want it pay for it.
//
// Wire it in through Config.Observer:
//
//	tel, err := otelretry.New(otelretry.Config{MeterProvider: mp, TracerProvider: tp})
//	if err != nil { ... }
//	client := &http.Client{Transport: retrybudget.New(retrybudget.Config{
//		Observer: tel.Observer().Join(slogretry.Observer(logger)),
//	})}
//
// The package never reads the OpenTelemetry globals: pass
// otel.GetMeterProvider() and otel.GetTracerProvider() to use them.
//
// # Metrics
//
// Every instrument's name starts with "retrybudget.". Durations are in
// seconds, as OpenTelemetry recommends.
//
//	name                          instrument          unit        attributes
//	retrybudget.attempts          Int64Counter        {attempt}   http.request.method, server.address, retrybudget.class, http.response.status_code¹
//	retrybudget.attempt.duration  Float64Histogram    s           as retrybudget.attempts
//	retrybudget.retries           Int64Counter        {retry}     http.request.method, server.address, retrybudget.class²
//	retrybudget.giveups           Int64Counter        {call}      http.request.method, server.address, retrybudget.class, retrybudget.reason, retrybudget.maybe_applied
//	retrybudget.budget.refusals   Int64Counter        {retry}     retrybudget.destination, retrybudget.budget.fallback
//	retrybudget.limiter.wait      Float64Histogram    s           retrybudget.boundary, retrybudget.limiter.reason¹, retrybudget.limiter.fallback
//	retrybudget.cooldowns         Int64Counter        {cooldown}  retrybudget.boundary
//	retrybudget.ledger.replays    Int64Counter        {action}    http.request.method, server.address, retrybudget.operation
//	retrybudget.ledger.conflicts  Int64Counter        {action}    http.request.method, server.address, retrybudget.operation
//	retrybudget.ledger.errors     Int64Counter        {error}     http.request.method, server.address, retrybudget.operation, retrybudget.ledger.op
//	retrybudget.ledger.expired    Int64Counter        {action}    http.request.method, server.address, retrybudget.operation
//	retrybudget.ledger.stuck      Int64Gauge          {action}    retrybudget.ledger.state (Sweep, LedgerReport)
//	retrybudget.ledger.reconciled Int64Counter        {action}    retrybudget.ledger.state (Sweep, LedgerReport)
//
// ¹ Only when there is one: a status code when the attempt got a response, a
// limiter reason when the limiter gave one.
//
// ² The class of the attempt that failed and is being retried.
//
// retrybudget.attempts counts every attempt sent, retries included, so
// first attempts are attempts minus retries, and the share the retry budget
// bounds is retries over first attempts. A retry is counted when the
// Transport decides to wait for it, so one whose wait is cut short (the
// context ends, the limiter refuses) is counted without an attempt.
// retrybudget.limiter.wait records each wait the limiter imposed, also the
// last one when the Transport gave up instead of waiting because it did not
// fit the deadline or MaxWait.
//
// retrybudget.ledger.replays counts calls the action ledger answered with a
// completed action's stored response, and retrybudget.ledger.conflicts calls
// whose action key was reused for a different request: both are duplicate
// effects prevented. retrybudget.ledger.errors counts ledger store
// operations that failed (retrybudget.ledger.op: reserve, complete, fail,
// attempt, renew, sweep), each an action the ledger may not protect.
// retrybudget.ledger.expired counts actions whose earlier record had
// outlived its retention, so the same key ran as a new action. The
// Observer's Sweep field records a ledger.Monitor's sweeps (pass it as
// MonitorConfig.Report): the stuck gauge, by state (in-progress, uncertain),
// and one reconciled per action by ledger.Reconciled.Result. The operation
// is the Action's ("charge"); its tenant and key are left out of metrics as
// unbounded.
//
// retrybudget.reason is a short, stable code for the Outcome's Reason:
// attempts_exhausted, deadline, wait_too_long, uncertain, rejected,
// budget_exhausted, throttled, rate_limited, limiter, body_not_replayable,
// pending, conflict, ledger, invalid_action, body_unreadable, canceled,
// deadline_exceeded, or other (a reason
// added to package retrybudget after this list).
//
// Attribute values are bounded by the destinations and boundaries a program
// talks to, with one exception to plan for: with limiter.ByCredential, a
// boundary names a hash of each credential, so a service holding many
// tenants' API keys gets a retrybudget.boundary series per key. Drop the
// attribute with an SDK View (an AttributeFilter) when that is too many.
//
// # Traces
//
// Each attempt is one span of kind Client, a child of the span in the
// request's context, following the OpenTelemetry semantic conventions for
// HTTP client spans (semconv 1.43): a retry is a new span of the same
// parent, with http.request.resend_count. The span is named after the
// method ("POST"), or "HTTP" for a method the conventions do not know. Its
// attributes:
//
//	http.request.method          the method, or _OTHER (then http.request.method_original)
//	server.address, server.port  the URL's host and port (the scheme's default when absent)
//	url.full                     scheme://host/path: the query string, userinfo and
//	                             fragment are left out, as they can carry credentials;
//	                             the path too with Config.OmitPath
//	http.response.status_code    when the attempt got a response
//	http.request.resend_count    the attempt's number minus one, only on retries
//	error.type                   on failure: the status code ("503") when there is
//	                             one, else the class ("transport-not-sent")
//	retrybudget.class            the attempt's class
//	retrybudget.key              the idempotency key, when one was sent
//
// A failed attempt (any class but success, or a status of 400 and up) has
// status Error; for a transport error, its description is the error message
// without the URL a *url.Error carries. No header, body or query string is
// ever recorded.
//
// Retries, give-ups, refused retries, limiter waits, cooldowns and ledger
// decisions are also added as events (retrybudget.retry,
// retrybudget.giveup, retrybudget.budget.refusal, retrybudget.limiter.wait,
// retrybudget.cooldown, retrybudget.ledger with the verdict and decision
// path, retrybudget.ledger.error) to the request context's span, when it is
// recording, so a trace shows what the Transport did around its attempts: a
// replayed action has a retrybudget.ledger event and no attempt span.
//
// The Observer learns of an attempt when it has ended, so the span is
// recorded afterwards with the attempt's start and end times; it cannot be
// the parent that a propagator injects into the attempt's headers. A Base
// wrapped in otelhttp.NewTransport makes its own per-attempt spans, which do
// propagate; use one or the other, not both, for attempt spans.
package otelretry
