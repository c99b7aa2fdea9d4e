package integrations

import (
	"context"
	"net/http"
)

// Bind returns a RoundTripper that sends every request through rt under
// ctx: with ctx's Action, deadline, cancellation and
// retrybudget.CaptureOutcome record.
// It is for SDKs whose calls take no context, such as twilio-go, which make
// every request with context.Background(): build the SDK's client around
// Bind(ctx, transport) for the one action, and the Transport gives the
// call the Action's key and ledger record and plans its retries around the
// deadline:
//
//	ctx = retrybudget.WithAction(ctx, retrybudget.Action{Operation: "sms", Key: orderID})
//	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
//	defer cancel()
//	hc := &http.Client{Transport: integrations.Bind(ctx, tr)}
//
// The request's own context is replaced by ctx, so Bind must not wrap an
// SDK that passes contexts of its own.
//
//snippet:needs app, stripe, sdk
func Bind(ctx context.Context, rt http.RoundTripper) http.RoundTripper {
	return boundTransport{ctx: ctx, rt: rt}
}

// boundTransport is the RoundTripper Bind returns.
type boundTransport struct {
	// ctx is held because the SDK under it cannot pass one: it is the
	// single context of the one action this RoundTripper is made for.
	ctx context.Context
	rt  http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (b boundTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return b.rt.RoundTrip(req.WithContext(b.ctx))
}
