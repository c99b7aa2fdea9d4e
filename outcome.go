package retrybudget

import (
	"context"
	"io"
	"net/http"
	"time"
)

// Outcome is what the Transport knows about one call when it returns: how
// many attempts it made, under which key, how the last one ended and, when it
// gave up, why and when it is worth trying again. Get it with errors.As on a
// returned error, or with OutcomeOf on a returned response.
type Outcome struct {
	// Class is the class of the last attempt.
	Class Class
	// Attempts is the number of attempts sent (or tried) to the provider,
	// a hedged copy included.
	Attempts int
	// Key is the idempotency key sent with every attempt; empty when the
	// request carried none.
	Key string
	// MaybeApplied reports whether any attempt may have had an effect at
	// the provider: a success, a server error, or a transport failure after
	// the request was written.
	MaybeApplied bool
	// Hedged reports that one of Attempts was a hedged copy, sent while
	// the first attempt was still in flight (Config.HedgeDelay).
	Hedged bool
	// RetryAt is the earliest time worth trying again after a give-up: the
	// provider's Retry-After when it sent one, else the next backoff
	// delay. Zero on success and when retrying cannot help.
	RetryAt time.Time
	// StatusCode is the last response's status code; 0 when the last
	// attempt had no response.
	StatusCode int
	// Problem holds the RFC 9457 problem details of the last response.
	Problem *Problem
	// Replayed reports that the response is the stored answer of an
	// action completed before (see Config.Ledger): nothing was sent.
	Replayed bool
	// BodyOmitted reports, on a replay, that the stored body was too large
	// to keep and the replayed body is empty.
	BodyOmitted bool
	// Route names the Route whose policy applied (Route.Name, else its
	// host and path prefix); empty when no Route matched and the
	// Transport's own Config applied.
	Route string
	// Repeated reports an SDK's re-send of a call the Transport had
	// already given up on, answered at once from that give-up without
	// sending: the other fields are the give-up's.
	Repeated bool
	// NotRemembered reports a give-up the Transport could not keep to
	// answer an SDK's re-send of the call: the memory of its tenant (or,
	// without one, its destination) was full of give-ups that may have
	// been applied, which are never evicted. An SDK's re-send of this call
	// is sent like a new one.
	NotRemembered bool
	// Reason is nil on success, else why the Transport stopped: one of the
	// Err* sentinels of this package, or the context's error.
	Reason error
}

// OutcomeOf returns the Outcome of the call that produced resp. It reports
// false when resp did not come from a Transport, or when something replaced
// its body: http.Client does so when Client.Timeout is set, so prefer a
// context deadline, which the Transport also plans its retries around.
func OutcomeOf(resp *http.Response) (Outcome, bool) {
	if resp == nil {
		return Outcome{}, false
	}
	b, ok := resp.Body.(*outcomeBody)
	if !ok {
		return Outcome{}, false
	}
	return *b.outcome, true
}

// outcomeBody carries the Outcome on a returned response without changing
// what the caller reads, and releases the attempt's context on Close.
type outcomeBody struct {
	io.ReadCloser
	outcome *Outcome
	cancel  context.CancelFunc
}

// Close closes the body and releases the attempt's context.
func (b *outcomeBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
