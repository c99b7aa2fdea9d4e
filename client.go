package retrybudget

import (
	"errors"
	"net/http"
)

// Transport is an http.RoundTripper that makes repeated outbound requests
// safe: it gives every call a stable idempotency key, classifies each
// failure, waits with capped, jittered exponential backoff that honours
// Retry-After and the deadline, and reports an Outcome the caller can act on.
//
// A Transport is safe for concurrent use. Use it as the Transport of an
// http.Client:
//
//	client := &http.Client{Transport: retrybudget.New(retrybudget.Config{})}
type Transport struct {
	cfg    Config
	clock  clock
	routes []route
	// route names the Route this Transport serves; empty for the
	// Transport the caller made.
	route string
	// noAction makes calls ignore the context's Action (Route.NoAction).
	noAction bool
	// gaveUp remembers recent give-ups, to answer an SDK's re-send of a
	// call already given up on without sending it.
	gaveUp giveUps
	// keys makes the keys of calls that carry none.
	keys keyMint
}

// New returns a Transport configured by cfg, whose zero fields take their
// documented defaults.
func New(cfg Config) *Transport {
	return newTransport(cfg, realClock{})
}

// newTransport returns the Transport of cfg running on clk: it and every
// component it builds by default (its routes' Transports, the default
// Budget) read the time and wait through clk, so a test's fake clock
// reaches them all.
func newTransport(cfg Config, clk clock) *Transport {
	cfg = cfg.withDefaults(clk)
	return &Transport{cfg: cfg, clock: clk, routes: newRoutes(cfg, clk)}
}

// RoundTrip implements http.RoundTripper. It never modifies req. Any
// response the provider sent is returned as (resp, nil), whatever its
// status, with its body unread; OutcomeOf(resp) tells whether the Transport
// gave up on it. When there is no response to return, the error is an
// *Error.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.check(req); err != nil {
		return nil, refuse(req, err, nil)
	}
	if len(t.routes) > 0 {
		if rt := match(t.routes, req); rt != nil {
			return rt.RoundTrip(req)
		}
	}
	c, err := t.newCall(req)
	if err != nil {
		if errors.Is(err, ErrInvalidAction) {
			return nil, refuse(req, ErrInvalidAction, nil)
		}
		return nil, refuse(req, ErrBodyUnreadable, err)
	}
	resp, err := c.run()
	captureOutcome(req.Context(), &c.out)
	return resp, err
}

// CloseIdleConnections closes the idle connections of the base transport,
// when it has that method, so http.Client.CloseIdleConnections works through
// a Transport.
func (t *Transport) CloseIdleConnections() {
	type closer interface{ CloseIdleConnections() }
	if c, ok := t.cfg.Base.(closer); ok {
		c.CloseIdleConnections()
	}
	// A route's Base may be the Transport's own: closing twice is harmless,
	// and Bases need not be comparable.
	for _, r := range t.routes {
		r.t.CloseIdleConnections()
	}
}

// Errors for requests the Transport cannot send at all.
var (
	errNotNew = errors.New("retrybudget: Transport not created with New")
	errNilURL = errors.New("retrybudget: nil Request.URL")
)

// refuse ends a call refused before any attempt: nothing was sent. It
// closes the request's body, as RoundTrip must, and records the Outcome for
// CaptureOutcome like any call's.
func refuse(req *http.Request, reason, cause error) *Error {
	e := &Error{Outcome: Outcome{Class: ClassNotSent, Reason: reason}, Cause: cause}
	if reason == ErrInvalidAction {
		// The request itself is wrong, as a rejection is: nothing failed
		// on the way, and retrying cannot help.
		e.Class = ClassBusiness
	}
	if req != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		captureOutcome(req.Context(), &e.Outcome)
	}
	return e
}

// check refuses a request that cannot be sent, as net/http does, rather
// than panicking on it.
func (t *Transport) check(req *http.Request) error {
	switch {
	case t.cfg.Classifier == nil:
		return errNotNew
	case req == nil || req.URL == nil:
		return errNilURL
	}
	return nil
}
