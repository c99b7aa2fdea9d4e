// Package sdktest holds the tests every SDK integration module runs: one
// provider SDK is described by an SDK value, and each exported function
// here is the body of one test, called from the module's own test of the
// same name. The tests drive the real SDK against its provider's fake
// (package fakes) and count arrivals and effects at the fake.
package sdktest

import (
	"context"
	"net/http"
	"testing"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/integrations/fakes"
)

// SDK is one provider SDK under test: how to fake its provider, which
// preset applies, and how to make one effect call through it.
type SDK struct {
	// Name names the SDK in logs and subtests, such as "stripe-go".
	Name string
	// Fake starts a fake of the provider.
	Fake func() *fakes.Provider
	// Preset returns the provider's Route.
	Preset func() retrybudget.Route
	// Retries reports that the SDK retries on its own at its defaults.
	Retries bool
	// RetriedStatus is a status the SDK re-sends at its defaults and that
	// asks for no effect; zero means 429.
	RetriedStatus int
	// Honours reports that the provider deduplicates by a key header.
	Honours bool
	// SetsOwnKey reports that the SDK puts an Idempotency-Key of its own
	// on a call, which the Action's key replaces.
	SetsOwnKey bool
	// Auxiliary is the number of calls the SDK makes before its first
	// effect call on a new client, such as PayPal's token call.
	Auxiliary int
	// FleetCalls is the number of calls of the outage fleet at the SDK's
	// defaults; zero means 200. An SDK whose own sleeps make each call
	// last seconds gets fewer.
	FleetCalls int
	// Call makes one effect call (a charge, a completion, an issue, a
	// message, an order) through the SDK sending through rt to url: at
	// the SDK's default retry settings when defaults is set, else as the
	// module's builder sets it up (retries off).
	Call func(ctx context.Context, url string, rt http.RoundTripper, defaults bool) error
}

// NewTransport returns a Transport whose only Route is s's preset pointed
// at p.
func NewTransport(s SDK, p *fakes.Provider, cfg retrybudget.Config) *retrybudget.Transport {
	cfg.Routes = []retrybudget.Route{s.Preset().At(p.URL())}
	return retrybudget.New(cfg)
}

// Start starts s's fake, closed at the end of the test.
func Start(t *testing.T, s SDK) *fakes.Provider {
	t.Helper()
	p := s.Fake()
	t.Cleanup(p.Close)
	return p
}

// Cut closes a fake provider's connection without an answer, as a request
// whose answer is lost: the client cannot tell whether it was applied.
func Cut(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}
