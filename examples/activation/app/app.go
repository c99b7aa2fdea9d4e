package app

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/idempotency"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/slogretry"
)

// Config wires the service.
type Config struct {
	// Store is the one ledger for both the inbound activations and the
	// outbound destination calls. It is required.
	Store ledger.Store
	// Activations keeps the activations. Nil means a MemoryActivations of
	// this handler alone, which another instance cannot read.
	Activations Activations
	// Destination is the destination's base URL. It is required.
	Destination string
	// Atomic runs the activation in a transaction of Store, which must
	// implement ledger.Atomic (idempotency.Config.Atomic), and Activations
	// must then write through that transaction (PostgreSQL: the
	// activation row and the action's completed record commit together).
	Atomic bool
	// Retention is how long an Idempotency-Key is remembered. Zero means
	// the store's (24 hours).
	Retention time.Duration
	// Lease is how long an activation holds its key before another
	// request may treat its server as dead. Zero means InboundLease.
	Lease time.Duration
	// Owner names this instance in ledger records. Empty means
	// "hostname:pid".
	Owner string
	// Logger receives the service's log. Nil means silent.
	Logger *slog.Logger
}

// InboundLease is the default Config.Lease: a 409 answer's Retry-After is
// at most this. The middleware renews it while the handler runs.
const InboundLease = 10 * time.Second

// New returns the service's handler: authentication, then the routes, the
// activation route behind the idempotency middleware.
func New(cfg Config) http.Handler {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	activations := cfg.Activations
	if activations == nil {
		activations = NewMemoryActivations()
	}
	lease := cfg.Lease
	if lease == 0 {
		lease = InboundLease
	}
	svc := &service{
		client: &http.Client{Transport: retrybudget.New(retrybudget.Config{
			Ledger: retrybudget.LedgerConfig{Store: cfg.Store},
			// The destination deduplicates by Idempotency-Key.
			KeysHonoured: true,
			MaxAttempts:  3,
			// A destination asking for a longer pause gets it passed on
			// to our client as Retry-After instead of holding the request.
			MaxWait:  2 * time.Second,
			Observer: slogretry.Observer(logger),
		})},
		destination: cfg.Destination,
		activations: activations,
	}
	guard := idempotency.New(idempotency.Config{
		Store:     cfg.Store,
		Tenant:    tenantOf,
		Retention: cfg.Retention,
		Lease:     lease,
		Atomic:    cfg.Atomic,
		Owner:     cfg.Owner,
		// Every effect of activate is deduplicated under the action: the
		// destination call by its derived key, the activation by its
		// derived ID. Running it again after a crash is therefore safe.
		RerunUncertain: true,
		Logger:         logger,
	})
	adm := &admin{store: cfg.Store}
	api := http.NewServeMux()
	api.Handle("POST "+activationsPath, guard(http.HandlerFunc(svc.activate)))
	api.HandleFunc("GET "+activationsPath+"/{id}", svc.get)
	ops := http.NewServeMux()
	ops.HandleFunc("GET /admin/tenants/{tenant}/actions/{key}", adm.action)
	ops.HandleFunc("GET /admin/stuck", adm.stuck)
	mux := http.NewServeMux()
	mux.Handle("/admin/", authenticate(demoOperatorTokens(), ops))
	mux.Handle("/", authenticate(demoTokens(), api))
	return mux
}

// activationsPath is the collection of activations; the inbound action's
// operation is "POST " and it, the route pattern.
const activationsPath = "/api/v1/campaign-activations"
