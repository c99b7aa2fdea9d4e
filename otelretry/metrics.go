package otelretry

import (
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Attribute keys of this package; the others come from the OpenTelemetry
// semantic conventions.
const (
	// ClassKey is the attempt's retrybudget.Class, as Class.String names
	// it, or "canceled" for the copy of a hedged attempt cancelled because
	// the other answered first (AttemptEvent.Canceled), which is no
	// failure.
	ClassKey = attribute.Key("retrybudget.class")
	// KeyKey is the idempotency key sent; only on spans, as it is unique
	// per action.
	KeyKey = attribute.Key("retrybudget.key")
	// ReasonKey is why a call gave up, as a short code (see the package
	// documentation).
	ReasonKey = attribute.Key("retrybudget.reason")
	// MaybeAppliedKey reports whether a call that gave up may have had an
	// effect at the provider.
	MaybeAppliedKey = attribute.Key("retrybudget.maybe_applied")
	// DestinationKey is the retry budget's destination.
	DestinationKey = attribute.Key("retrybudget.destination")
	// BudgetFallbackKey reports that a shared budget was unreachable and
	// its local fallback decided.
	BudgetFallbackKey = attribute.Key("retrybudget.budget.fallback")
	// BoundaryKey is the rate limiter boundary.
	BoundaryKey = attribute.Key("retrybudget.boundary")
	// LimiterReasonKey is the check that made the limiter refuse: rate,
	// owner or cooldown.
	LimiterReasonKey = attribute.Key("retrybudget.limiter.reason")
	// LimiterFallbackKey reports that the limiter's decision came from its
	// local fallback.
	LimiterFallbackKey = attribute.Key("retrybudget.limiter.fallback")
	// DelayKey is a retry's wait in seconds; only on span events.
	DelayKey = attribute.Key("retrybudget.delay")
	// RetryAfterKey is the wait the provider asked for in seconds; only
	// on span events.
	RetryAfterKey = attribute.Key("retrybudget.retry_after")
	// OperationKey is the Action's operation, such as "charge".
	OperationKey = attribute.Key("retrybudget.operation")
	// LedgerOpKey is the ledger store operation that failed: reserve,
	// complete, fail, attempt, renew or sweep.
	LedgerOpKey = attribute.Key("retrybudget.ledger.op")
	// VerdictKey is the ledger's verdict; only on span events.
	VerdictKey = attribute.Key("retrybudget.ledger.verdict")
	// ExpiredKey reports that the action's earlier record had outlived its
	// retention and the call runs it anew; only on span events.
	ExpiredKey = attribute.Key("retrybudget.ledger.expired")
	// DecisionKey is the ledger's decision path in words; only on span
	// events.
	DecisionKey = attribute.Key("retrybudget.ledger.decision")
	// UntilKey is the end of a boundary's pause, in RFC 3339; only on span
	// events.
	UntilKey = attribute.Key("retrybudget.until")
)

// durationBuckets returns the histogram boundaries, in seconds, of attempt
// durations and limiter waits: those the semantic conventions advise for
// http.client.request.duration, extended to the Transport's default MaxWait
// of 60s.
func durationBuckets() []float64 {
	return []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30, 60}
}

// instruments are the metric instruments of a Telemetry.
type instruments struct {
	attempts        metric.Int64Counter
	attemptDuration metric.Float64Histogram
	retries         metric.Int64Counter
	giveUps         metric.Int64Counter
	refusals        metric.Int64Counter
	limiterWait     metric.Float64Histogram
	cooldowns       metric.Int64Counter
	replays         metric.Int64Counter
	conflicts       metric.Int64Counter
	ledgerErrors    metric.Int64Counter
	stuck           metric.Int64Gauge   // see LedgerReport
	reconciled      metric.Int64Counter // see LedgerReport
	expired         metric.Int64Counter
}

// newInstruments creates every instrument, or reports all that failed.
func newInstruments(m metric.Meter) (instruments, error) {
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	histogram := func(name, desc string) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(durationBuckets()...))
		errs = append(errs, err)
		return h
	}
	in := instruments{
		attempts:        counter("retrybudget.attempts", "{attempt}", "Attempts sent to a provider, first attempts included."),
		attemptDuration: histogram("retrybudget.attempt.duration", "Duration of one attempt, up to its response headers or error."),
		retries:         counter("retrybudget.retries", "{retry}", "Retries about to be waited for, by the class of the failed attempt."),
		giveUps:         counter("retrybudget.giveups", "{call}", "Calls that ended without success, by reason."),
		refusals:        counter("retrybudget.budget.refusals", "{retry}", "Retries the retry budget refused."),
		limiterWait:     histogram("retrybudget.limiter.wait", "Waits the rate limiter imposed before an attempt."),
		cooldowns:       counter("retrybudget.cooldowns", "{cooldown}", "Pauses of a whole limiter boundary asked for by a provider."),
		replays:         counter("retrybudget.ledger.replays", "{action}", "Actions answered from the ledger instead of being sent again."),
		conflicts:       counter("retrybudget.ledger.conflicts", "{action}", "Action keys reused for a different request."),
		ledgerErrors:    counter("retrybudget.ledger.errors", "{error}", "Ledger store operations that failed."),
		expired:         counter("retrybudget.ledger.expired", "{action}", "Actions run anew because their earlier record had outlived its retention."),
	}
	var err error
	in.stuck, err = m.Int64Gauge("retrybudget.ledger.stuck", metric.WithUnit("{action}"),
		metric.WithDescription("Stuck actions the last ledger sweep found, by state: in-progress (lease run out) or uncertain."))
	errs = append(errs, err)
	in.reconciled = counter("retrybudget.ledger.reconciled", "{action}", "Stuck actions a ledger sweep reconciled, by the state they were settled in.")
	return in, errors.Join(errs...)
}
