package otelretry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/limiter"
	"github.com/retrybudget/retrybudget/otelretry"
)

// harness is a Telemetry on real SDK providers whose metrics and spans the
// test reads back.
type harness struct {
	tel    *otelretry.Telemetry
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
}

func newHarness(t *testing.T, cfg otelretry.Config) *harness {
	t.Helper()
	h := &harness{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))
	h.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(h.spans))
	t.Cleanup(func() {
		mp.Shutdown(context.Background())
		h.tp.Shutdown(context.Background())
	})
	cfg.MeterProvider, cfg.TracerProvider = mp, h.tp
	tel, err := otelretry.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.tel = tel
	return h
}

// metrics collects every metric recorded so far, by name.
func (h *harness) metrics(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := h.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otelretry.ScopeName {
			t.Errorf("scope %q; want %q", sm.Scope.Name, otelretry.ScopeName)
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// has reports whether set holds every one of want.
func has(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// count sums the points of the counter name whose attributes hold want.
func count(t *testing.T, ms map[string]metricdata.Metrics, name string, want ...attribute.KeyValue) int64 {
	t.Helper()
	m, ok := ms[name]
	if !ok {
		return 0
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s is a %T; want an int64 sum", name, m.Data)
	}
	var n int64
	for _, p := range sum.DataPoints {
		if has(p.Attributes, want) {
			n += p.Value
		}
	}
	return n
}

// histogram returns the count and sum of the points of the histogram name
// whose attributes hold want.
func histogram(t *testing.T, ms map[string]metricdata.Metrics, name string, want ...attribute.KeyValue) (uint64, float64) {
	t.Helper()
	m, ok := ms[name]
	if !ok {
		return 0, 0
	}
	hist, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s is a %T; want a float64 histogram", name, m.Data)
	}
	var n uint64
	var sum float64
	for _, p := range hist.DataPoints {
		if has(p.Attributes, want) {
			n += p.Count
			sum += p.Sum
		}
	}
	return n, sum
}

// attr returns the value of key on s, and whether it is set.
func attr(s sdktrace.ReadOnlySpan, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// server is an httptest.Server answering each request with the next of its
// statuses (the last repeats); "429:0" also sends Retry-After: 0.
func server(t *testing.T, statuses ...string) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		n++
		s := statuses[min(n, len(statuses))-1]
		mu.Unlock()
		code, after, ok := strings.Cut(s, ":")
		if ok {
			w.Header().Set("Retry-After", after)
		}
		c, _ := strconv.Atoi(code)
		w.WriteHeader(c)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// do sends one POST with an idempotency key through a Transport with cfg,
// against srv, and returns the response's status or the error.
func do(ctx context.Context, t *testing.T, srv *httptest.Server, cfg retrybudget.Config) (int, error) {
	t.Helper()
	cfg.Base = srv.Client().Transport
	if cfg.BaseDelay == 0 {
		cfg.BaseDelay = time.Millisecond
	}
	client := &http.Client{Transport: retrybudget.New(cfg)}
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/charges?expand=customer", strings.NewReader(`{"amount":1999}`))
	req.Header.Set("Idempotency-Key", "order-1042")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// stepLimiter is a limiter.Limiter that refuses the first asks with its
// waits in turn, then allows, and records cooldowns.
type stepLimiter struct {
	mu        sync.Mutex // guards waits and cooldowns
	waits     []time.Duration
	cooldowns []time.Time
}

func (l *stepLimiter) Allow(context.Context, limiter.Request) (limiter.Decision, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.waits) == 0 {
		return limiter.Decision{Allowed: true}, nil
	}
	w := l.waits[0]
	l.waits = l.waits[1:]
	return limiter.Decision{RetryAfter: w, Reason: limiter.ReasonRate}, nil
}

func (l *stepLimiter) Cooldown(_ context.Context, _ string, until time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cooldowns = append(l.cooldowns, until)
	return nil
}
