package otelretry_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/otelretry"
)

// Example reports a call retried twice. An offline provider answers 503, 429
// and then 201; the metrics are read back through a manual reader, where a
// service would export them.
func Example() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))

	tel, err := otelretry.New(otelretry.Config{MeterProvider: mp, TracerProvider: tp})
	if err != nil {
		fmt.Println(err)
		return
	}
	statuses := []int{503, 429, 201}
	provider := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		code := statuses[0]
		statuses = statuses[1:]
		return &http.Response{StatusCode: code, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
	})
	client := &http.Client{Transport: retrybudget.New(retrybudget.Config{
		Base:      provider,
		BaseDelay: time.Millisecond,
		Observer:  tel.Observer(),
	})}
	req, _ := http.NewRequest("POST", "https://api.example.com/v1/charges", strings.NewReader(`{"amount":1999}`))
	req.Header.Set("Idempotency-Key", "order-1042")
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()

	var rm metricdata.ResourceMetrics
	reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
			var n int64
			for _, p := range sum.DataPoints {
				n += p.Value
			}
			fmt.Println(m.Name, n)
		}
	}
	for _, s := range spans.Ended() {
		fmt.Println("span", s.Name(), s.Status().Code)
	}
	// Output:
	// retrybudget.attempts 3
	// retrybudget.retries 2
	// span POST Error
	// span POST Error
	// span POST Unset
}
