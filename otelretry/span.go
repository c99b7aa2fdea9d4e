package otelretry

import (
	"context"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/internal/redact"
)

// attemptSpan records one finished attempt as a client span, child of the
// span in the request's context. The Observer hears of the attempt only
// when it has ended, so the span is started and ended at once, with the
// attempt's own start and end times.
func (t *Telemetry) attemptSpan(ctx context.Context, ev retrybudget.AttemptEvent, end time.Time) {
	req := ev.Request
	method, known := t.method(req)
	name := method
	if !known {
		name = "HTTP" // semantic conventions: the name for an unknown method
	}
	attrs := make([]attribute.KeyValue, 0, 12)
	attrs = append(attrs, semconv.HTTPRequestMethodKey.String(method))
	if !known {
		attrs = append(attrs, semconv.HTTPRequestMethodOriginal(req.Method))
	}
	if u := req.URL; u != nil {
		attrs = append(attrs,
			semconv.ServerAddress(u.Hostname()),
			semconv.ServerPort(serverPort(u)),
			semconv.URLFull(fullURL(u, t.omitPath)),
		)
	}
	if ev.StatusCode != 0 {
		attrs = append(attrs, semconv.HTTPResponseStatusCode(ev.StatusCode))
	}
	// The semantic conventions count resends, not attempts, and leave the
	// attribute out of the first send.
	if ev.Attempt > 1 {
		attrs = append(attrs, semconv.HTTPRequestResendCount(ev.Attempt-1))
	}
	attrs = append(attrs, attemptClass(ev))
	if k := t.ids.Value(ev.Key); k != "" {
		attrs = append(attrs, KeyKey.String(k))
	}
	failed := !ev.Canceled && (ev.Class != retrybudget.ClassSuccess || ev.StatusCode >= 400)
	if failed {
		attrs = append(attrs, errorType(ev))
	}

	_, span := t.tracer.Start(ctx, name,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(end.Add(-ev.Duration)),
		trace.WithAttributes(attrs...),
	)
	if failed {
		// A status description is only for errors a status code does not
		// already say (semantic conventions, HTTP span status).
		desc := ""
		if ev.Err != nil {
			desc = redact.ErrorText(ev.Err)
		}
		span.SetStatus(codes.Error, desc)
	}
	span.End(trace.WithTimestamp(end))
}

// errorType returns the error.type of a failed attempt: the status code when
// the response is the error, as the semantic conventions ask, else the
// class, a low-cardinality name for what went wrong ("transport-not-sent").
func errorType(ev retrybudget.AttemptEvent) attribute.KeyValue {
	if ev.StatusCode >= 400 {
		return semconv.ErrorTypeKey.String(strconv.Itoa(ev.StatusCode))
	}
	return semconv.ErrorTypeKey.String(ev.Class.String())
}
