package main

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/idempotency"
	"github.com/retrybudget/retrybudget/ledger"
)

// appConfig wires the service.
type appConfig struct {
	// store is the one ledger for both the inbound activations and the
	// outbound destination calls.
	store ledger.Store
	// destination is the destination's base URL.
	destination string
	// retention is how long an Idempotency-Key is remembered; zero means
	// the store's (24 hours).
	retention time.Duration
	logger    *slog.Logger
}

// inboundLease is how long an activation holds its key before another
// request may treat its server as dead; a 409 answer's Retry-After is at
// most this. The middleware renews it while the handler runs.
const inboundLease = 10 * time.Second

// newApp returns the service's handler: authentication, then the routes,
// the activation route behind the idempotency middleware.
func newApp(cfg appConfig) http.Handler {
	svc := &service{
		client: &http.Client{Transport: retrybudget.New(retrybudget.Config{
			Ledger: retrybudget.LedgerConfig{Store: cfg.store},
			// The destination deduplicates by Idempotency-Key.
			KeysHonoured: true,
			MaxAttempts:  3,
			// A destination asking for a longer pause gets it passed on
			// to our client as Retry-After instead of holding the request.
			MaxWait:  2 * time.Second,
			Observer: retrybudget.LogObserver(cfg.logger),
		})},
		destination: cfg.destination,
		activations: map[string]activation{},
	}
	guard := idempotency.New(idempotency.Config{
		Store:     cfg.store,
		Tenant:    tenantOf,
		Retention: cfg.retention,
		Lease:     inboundLease,
		// Every effect of activate is deduplicated under the action: the
		// destination call by its derived key, the activation by its
		// derived ID. Running it again after a crash is therefore safe.
		RerunUncertain: true,
		Logger:         cfg.logger,
	})
	mux := http.NewServeMux()
	mux.Handle("POST /api/v1/campaign-activations", guard(http.HandlerFunc(svc.activate)))
	mux.HandleFunc("GET /api/v1/campaign-activations/{id}", svc.get)
	return authenticate(demoTokens(), mux)
}
