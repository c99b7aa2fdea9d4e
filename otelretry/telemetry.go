package otelretry

import (
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/retrybudget/retrybudget"
)

// ScopeName is the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/retrybudget/retrybudget/otelretry"

// Config configures a Telemetry. The zero value is valid and records
// nothing.
type Config struct {
	// MeterProvider creates the instruments listed in the package
	// documentation. Nil means no metrics.
	MeterProvider metric.MeterProvider
	// TracerProvider creates one span per attempt. Nil means no spans and
	// no span events.
	TracerProvider trace.TracerProvider
	// KnownMethods lists the request methods recorded as they are; any
	// other is recorded as "_OTHER", as the semantic conventions require,
	// so that a client sending arbitrary methods cannot grow the number of
	// series without bound. Nil means the methods of RFC 9110 §9, PATCH
	// (RFC 5789) and QUERY.
	KnownMethods []string
	// OmitPath leaves the URL path out of url.full, for providers that put
	// a secret in the path (webhook URLs, bot tokens). False records
	// scheme://host/path. Identities.OmitPath does the same.
	OmitPath bool
	// Identities says whether idempotency keys (retrybudget.key) and the
	// credential part of boundaries (retrybudget.boundary) are recorded:
	// the zero value leaves them out, recording a boundary only up to its
	// first '#', as slogretry.Observer does (see
	// retrybudget.Identities).
	Identities retrybudget.Identities
}

// Telemetry holds the instruments and the tracer that report a Transport's
// events. It is safe for concurrent use; one Telemetry can serve any number
// of Transports.
type Telemetry struct {
	tracer trace.Tracer // nil without a TracerProvider
	m      instruments
	// known is the set of methods recorded as they are; nil means the
	// semantic conventions' list (isDefaultMethod).
	known    map[string]bool
	omitPath bool
	ids      retrybudget.Identities
}

// New returns a Telemetry for cfg. It fails only when the MeterProvider
// refuses to create an instrument.
func New(cfg Config) (*Telemetry, error) {
	mp := cfg.MeterProvider
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	m, err := newInstruments(mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL)))
	if err != nil {
		return nil, err
	}
	t := &Telemetry{m: m, omitPath: cfg.OmitPath || cfg.Identities.OmitPath, ids: cfg.Identities}
	if cfg.KnownMethods != nil {
		t.known = make(map[string]bool, len(cfg.KnownMethods))
		for _, k := range cfg.KnownMethods {
			t.known[k] = true
		}
	}
	if cfg.TracerProvider != nil {
		t.tracer = cfg.TracerProvider.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL))
	}
	return t, nil
}

// NewObserver returns an Observer that records metrics with mp and spans
// with tp. A nil provider records nothing of its kind. It is short for
// New(Config{MeterProvider: mp, TracerProvider: tp}).Observer().
func NewObserver(mp metric.MeterProvider, tp trace.TracerProvider) (retrybudget.Observer, error) {
	t, err := New(Config{MeterProvider: mp, TracerProvider: tp})
	if err != nil {
		return retrybudget.Observer{}, err
	}
	return t.Observer(), nil
}

// Observer returns the retrybudget.Observer that reports to t. Combine it
// with others through retrybudget.Observers.
func (t *Telemetry) Observer() retrybudget.Observer {
	return retrybudget.Observer{
		Attempt:  t.attempt,
		Retry:    t.retry,
		GiveUp:   t.giveUp,
		Budget:   t.budget,
		Limited:  t.limited,
		Cooldown: t.cooldown,
		Ledger:   t.ledger,
		Sweep:    t.LedgerReport,
	}
}
