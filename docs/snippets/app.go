//go:build snippet

// Package main declares what the documentation's Go fragments use without
// declaring: the program around them. The docs snippet test
// (internal/docsnippets) compiles it with every fragment whose fence is
// preceded by <!-- snippet: needs app -->.
package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"

	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/limiter"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

var (
	ctx    context.Context // the caller's context
	body   io.Reader       // a request body
	store  ledger.Store    // a ledger store (ledger.NewRedis, pgledger.New, ledger.NewMemory)
	lim    limiter.Limiter // a limiter (limiter.NewRedis, limiter.NewLocal)
	logger *slog.Logger    // the service's logger
	mux    *http.ServeMux  // the service's routes
	charge http.Handler    // a handler with an effect
	addr   string          // the address the service listens on
	mp     metric.MeterProvider
	tp     trace.TracerProvider
)

// accountOf returns the authenticated account of a request.
func accountOf(r *http.Request) string { return r.Header.Get("X-Account") }

// authenticate stands for the service's authentication middleware.
func authenticate(h http.Handler) http.Handler { return h }

// use stands for the program's own code that uses client.
func use(client *http.Client) { _ = client }
