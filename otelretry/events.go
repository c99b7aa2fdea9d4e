package otelretry

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/internal/redact"
	"github.com/retrybudget/retrybudget/ledger"
)

// Each method below handles one Observer event; Observer wires them to its
// fields, so a new event is one method and one line there.

func (t *Telemetry) attempt(ev retrybudget.AttemptEvent) {
	end := time.Now()
	ctx := contextOf(ev.Request)
	attrs := t.metricAttrs(ev.Request, 2)
	attrs = append(attrs, attemptClass(ev))
	if ev.StatusCode != 0 {
		attrs = append(attrs, semconv.HTTPResponseStatusCode(ev.StatusCode))
	}
	set := metric.WithAttributeSet(attribute.NewSet(attrs...))
	t.m.attempts.Add(ctx, 1, set)
	t.m.attemptDuration.Record(ctx, ev.Duration.Seconds(), set)
	if t.tracer != nil && ev.Request != nil {
		t.attemptSpan(ctx, ev, end)
	}
}

// attemptClass is the class attribute of an attempt: "canceled" for the
// losing copy of a hedged attempt, else its Class.
func attemptClass(ev retrybudget.AttemptEvent) attribute.KeyValue {
	if ev.Canceled {
		return ClassKey.String("canceled")
	}
	return ClassKey.String(ev.Class.String())
}

func (t *Telemetry) retry(ev retrybudget.RetryEvent) {
	ctx := contextOf(ev.Request)
	attrs := t.metricAttrs(ev.Request, 1)
	attrs = append(attrs, ClassKey.String(ev.Class.String()))
	t.m.retries.Add(ctx, 1, metric.WithAttributes(attrs...))
	t.event(ctx, "retrybudget.retry",
		semconv.HTTPRequestResendCount(ev.Attempt-1),
		ClassKey.String(ev.Class.String()),
		DelayKey.Float64(ev.Delay.Seconds()),
		RetryAfterKey.Float64(ev.RetryAfter.Seconds()),
	)
}

// giveUp counts the call by reason. The Outcome's Problem is left out: it
// comes from the response body.
func (t *Telemetry) giveUp(ev retrybudget.GiveUpEvent) {
	ctx := contextOf(ev.Request)
	o := ev.Outcome
	attrs := t.metricAttrs(ev.Request, 3)
	attrs = append(attrs,
		ClassKey.String(o.Class.String()),
		ReasonKey.String(retrybudget.ReasonCode(o.Reason)),
		MaybeAppliedKey.Bool(o.MaybeApplied),
	)
	t.m.giveUps.Add(ctx, 1, metric.WithAttributes(attrs...))
	t.event(ctx, "retrybudget.giveup", attrs[len(attrs)-3:]...)
}

// budget counts refusals only: an allowed retry is already counted in
// retrybudget.retries.
func (t *Telemetry) budget(ev retrybudget.BudgetEvent) {
	if ev.Decision.Allowed {
		return
	}
	ctx := contextOf(ev.Request)
	attrs := []attribute.KeyValue{
		DestinationKey.String(t.ids.Boundary(ev.Destination)),
		BudgetFallbackKey.Bool(ev.Decision.Fallback),
	}
	t.m.refusals.Add(ctx, 1, metric.WithAttributes(attrs...))
	t.event(ctx, "retrybudget.budget.refusal", attrs...)
}

func (t *Telemetry) limited(ev retrybudget.LimitEvent) {
	ctx := contextOf(ev.Request)
	attrs := make([]attribute.KeyValue, 0, 3)
	attrs = append(attrs, BoundaryKey.String(t.ids.Boundary(ev.Boundary)))
	if ev.Decision.Reason != "" {
		attrs = append(attrs, LimiterReasonKey.String(string(ev.Decision.Reason)))
	}
	attrs = append(attrs, LimiterFallbackKey.Bool(ev.Decision.Fallback))
	t.m.limiterWait.Record(ctx, ev.Wait.Seconds(), metric.WithAttributes(attrs...))
	t.event(ctx, "retrybudget.limiter.wait", append(attrs, DelayKey.Float64(ev.Wait.Seconds()))...)
}

func (t *Telemetry) cooldown(ev retrybudget.LimitEvent) {
	ctx := contextOf(ev.Request)
	boundary := BoundaryKey.String(t.ids.Boundary(ev.Boundary))
	t.m.cooldowns.Add(ctx, 1, metric.WithAttributes(boundary))
	t.event(ctx, "retrybudget.cooldown",
		boundary, UntilKey.String(ev.Until.UTC().Format(time.RFC3339Nano)))
}

// ledger counts replays and conflicts, the verdicts that mean the ledger
// kept an action from being sent twice, store failures, which mean it may
// not have, and expiries, a key run anew past its retention. Every verdict
// is a span event.
func (t *Telemetry) ledger(ev retrybudget.LedgerEvent) {
	ctx := contextOf(ev.Request)
	attrs := t.metricAttrs(ev.Request, 2)
	attrs = append(attrs, OperationKey.String(ev.Action.Operation))
	switch {
	case ev.Err != nil:
		attrs = append(attrs, LedgerOpKey.String(ev.Op))
		t.m.ledgerErrors.Add(ctx, 1, metric.WithAttributes(attrs...))
		t.event(ctx, "retrybudget.ledger.error", OperationKey.String(ev.Action.Operation),
			LedgerOpKey.String(ev.Op), semconv.ExceptionMessageKey.String(redact.ErrorText(ev.Err)))
		return
	case ev.Verdict == ledger.VerdictReplayed:
		t.m.replays.Add(ctx, 1, metric.WithAttributes(attrs...))
	case ev.Verdict == ledger.VerdictConflict:
		t.m.conflicts.Add(ctx, 1, metric.WithAttributes(attrs...))
	}
	if ev.Expired {
		t.m.expired.Add(ctx, 1, metric.WithAttributes(attrs...))
	}
	t.event(ctx, "retrybudget.ledger", OperationKey.String(ev.Action.Operation),
		VerdictKey.String(ev.Verdict.String()), DecisionKey.StringSlice(ev.Path), ExpiredKey.Bool(ev.Expired))
}

// event adds an event to the span of ctx when spans are on and that span is
// recording; the span belongs to the caller, who sees what the Transport
// did between attempts.
func (t *Telemetry) event(ctx context.Context, name string, attrs ...attribute.KeyValue) {
	if t.tracer == nil {
		return
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(name, trace.WithAttributes(attrs...))
	}
}

// contextOf returns the request's context, for exemplars and parent spans.
func contextOf(req *http.Request) context.Context {
	if req == nil {
		return context.Background()
	}
	return req.Context()
}
