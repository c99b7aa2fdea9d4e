package app

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// shutdownTimeout bounds a graceful shutdown.
const shutdownTimeout = 10 * time.Second

// ServeConfig is what Serve runs.
type ServeConfig struct {
	// Addr is the address the service listens on.
	Addr string
	// App configures the service. An empty App.Destination means a
	// Destination that Serve starts on a loopback port of its own.
	App Config
	// Slow is how long the embedded destination takes to sync
	// SlowAudience.
	Slow time.Duration
	// Ledger describes the ledger for the startup log. It must hold no
	// secret.
	Ledger string
}

// Serve serves the service until ctx ends, then shuts down what it
// started.
func Serve(ctx context.Context, cfg ServeConfig) error {
	logger := cfg.App.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	errc := make(chan error, 2)
	if cfg.App.Destination == "" {
		dln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		dsrv := &http.Server{Handler: NewDestination(HoldFor(cfg.Slow), logger).Handler(), ReadHeaderTimeout: 5 * time.Second}
		go func() { errc <- dsrv.Serve(dln) }()
		defer dsrv.Close()
		cfg.App.Destination = "http://" + dln.Addr().String()
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	logger.Info("activation: listening", "addr", ln.Addr().String(), "destination", cfg.App.Destination, "ledger", cfg.Ledger)
	return ServeOn(ctx, ln, New(cfg.App), errc)
}

// ServeOn serves h on ln until ctx ends or errc (which may be nil) yields
// an error, then shuts the server down gracefully.
func ServeOn(ctx context.Context, ln net.Listener, h http.Handler, errc chan error) error {
	if errc == nil {
		errc = make(chan error, 1)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		_ = srv.Close()
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// HoldFor returns a Destination hold that waits d, or until its context
// ends.
func HoldFor(d time.Duration) func(context.Context) {
	return func(ctx context.Context) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}
