package retrybudget

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"time"
)

// Classifier decides the Class of one attempt. The Transport calls it after
// every attempt; it must be safe for concurrent use and must not close the
// response body. A Classifier that wants to read the body must leave an
// equivalent unread body in place, as DefaultClassifier does for problem
// details.
type Classifier interface {
	Classify(a *AttemptResult) Classification
}

// AttemptResult is what one attempt produced, as handed to a Classifier.
type AttemptResult struct {
	// Request is the request that was sent for this attempt.
	Request *http.Request
	// Response is the provider's response, nil when Err is set.
	Response *http.Response
	// Err is the transport error, nil when Response is set.
	Err error
	// Traced reports whether Connected and Written were observed with
	// net/http/httptrace. The Transport traces requests whose method is
	// not idempotent, keyed requests and calls with a ledger, where the
	// difference decides whether to retry or whether an effect is
	// possible.
	Traced bool
	// Connected reports that the attempt obtained a connection.
	Connected bool
	// Written reports that the request was written (fully or partly).
	Written bool
	// Repeatable reports that the request is safe to repeat: its method
	// is idempotent, or it carries a key the provider honours (an
	// Action's, the caller's, or a generated one with
	// Config.KeysHonoured).
	Repeatable bool
	// Now is the time the attempt ended, for resolving Retry-After.
	Now time.Time
}

// Classification is a Classifier's verdict on one attempt.
type Classification struct {
	// Class is the kind of result.
	Class Class
	// RetryAt is the earliest time the provider allows a retry, from
	// Retry-After; zero when the provider gave none.
	RetryAt time.Time
	// Problem holds the RFC 9457 problem details the provider sent, if any.
	Problem *Problem
	// Hint is the provider's own word on retrying this attempt, such as
	// Stripe-Should-Retry; it overrides what the Class alone decides.
	Hint RetryHint
	// PauseUntil, when set, pauses the whole limiter boundary until then,
	// even after a success: a rate-limit header said the quota is spent.
	PauseUntil time.Time
	// PauseScopeUntil, when set, pauses until then the scope the request's
	// limiter boundary is within (limiter.Scope), and so every boundary in
	// it, not only the request's: for a limit the provider keeps across
	// several boundaries, such as GitHub's secondary rate limit across the
	// resources of a credential. For a boundary within no scope it pauses
	// the boundary itself. Zero pauses no scope.
	PauseScopeUntil time.Time
	// MaybeApplied reports that the provider may have applied the request
	// although Class alone says it did not, such as a 503 without
	// Retry-After, which a gateway may answer after the upstream applied
	// the request. Such an attempt is retried only when the request is
	// safe to repeat (an idempotent method or a key the provider honours),
	// and it makes the Outcome MaybeApplied.
	MaybeApplied bool
	// Unsaved reports that the provider saved nothing for this answer: it
	// refused the request before executing it (Stripe: a validation
	// failure, its own concurrent-request 409, a 429), so the request had
	// no effect and no result is kept under its idempotency key. The
	// attempt adds nothing to Outcome.MaybeApplied, and when it is the
	// call's last, the ledger records the action as failed without effect
	// rather than storing the answer as the action's: a corrected request
	// under the same Action is sent, as the provider would take it. A
	// preset's classifier sets it for the answers its provider documents.
	Unsaved bool
}

// retryable reports whether the attempt may be retried at all, given
// whether the request is safe to repeat; a Hint overrides it.
func (c Classification) retryable(repeatable bool) bool {
	return c.Class.retryable(repeatable) && (repeatable || !c.MaybeApplied)
}

// mayHaveApplied reports whether the attempt may have caused an effect at
// the provider.
func (c Classification) mayHaveApplied() bool {
	return c.MaybeApplied || c.Class.mayHaveApplied()
}

// RetryHint is a provider's explicit advice on retrying an attempt.
type RetryHint int

const (
	// HintNone leaves the decision to the Class.
	HintNone RetryHint = iota
	// HintRetry says the attempt may be retried whatever its Class, for
	// example Stripe-Should-Retry: true on a 409 lock conflict.
	HintRetry
	// HintNoRetry says the attempt must not be retried whatever its
	// Class, for example Stripe-Should-Retry: false on a 500.
	HintNoRetry
)

// DefaultClassifier is the Classifier the Transport uses when Config has
// none. Its rules are the classification table in the README. The zero value
// is ready to use.
//
// On top of the status's class (see Class) it applies two rules that depend on more than
// the status. A 503 without a usable Retry-After is MaybeApplied: load
// balancers and gateways (Envoy, cloud load balancers) answer 503 after
// the upstream applied the request, so only a provider that said when to
// come back has said it refused the request. A 409 to a repeatable request
// carrying an idempotency key is ClassServer: under the IETF Idempotency-Key draft
// (§2.7) and at Stripe it means a request with the same key is still being
// processed, so it is retried under the same key and never taken as the
// action's answer. No provider-neutral
// "should retry" header exists; presets read the providers' own (such as
// Stripe-Should-Retry).
type DefaultClassifier struct {
	// KeyHeader names the idempotency key header. Empty means
	// DefaultKeyHeader. New sets it to Config.KeyHeader when Config has
	// no Classifier.
	KeyHeader string
}

// Classify implements Classifier.
func (d DefaultClassifier) Classify(a *AttemptResult) Classification {
	if a.Response == nil {
		return Classification{Class: classifyError(a)}
	}
	code := a.Response.StatusCode
	c := Classification{Class: classifyStatus(code)}
	if c.Class == ClassSuccess {
		return c
	}
	at, ok := retryAfter(a.Response, a.Now)
	if ok {
		c.RetryAt = at
	}
	switch {
	case code == http.StatusServiceUnavailable && !ok:
		c.MaybeApplied = true
	case code == http.StatusConflict && a.Repeatable && d.keyed(a.Request):
		c.Class = ClassServer
	}
	c.Problem = peekProblem(a.Response)
	return c
}

// inProgress reports whether resp answers a keyed request "in progress": a
// 409 to a request carrying an idempotency key means another request under
// the key is still being processed (draft-ietf-httpapi-idempotency-key-header
// §2.7, Stripe, this module's own middleware). Whatever a Classifier made
// of it, it is not the action's answer (the ledger never stores it), and
// asking again reads that answer rather than redoing work (it spends no
// retry budget).
func inProgress(resp *http.Response, keyed bool) bool {
	return keyed && resp != nil && resp.StatusCode == http.StatusConflict
}

// keyed reports whether req carries an idempotency key.
func (d DefaultClassifier) keyed(req *http.Request) bool {
	h := d.KeyHeader
	if h == "" {
		h = DefaultKeyHeader
	}
	return req != nil && req.Header.Get(h) != ""
}

// classifyStatus maps an HTTP status code to its Class (the table in the
// Class constants' documentation).
func classifyStatus(code int) Class {
	switch {
	case code < 400:
		return ClassSuccess
	case code == http.StatusTooManyRequests, // RFC 6585 §4
		code == http.StatusServiceUnavailable, // RFC 9110 §15.6.4
		code == http.StatusRequestTimeout,     // RFC 9110 §15.5.9
		code == http.StatusTooEarly:           // RFC 8470 §5.2
		return ClassCapacity
	case code < 500:
		return ClassBusiness
	case code == http.StatusNotImplemented,
		code == http.StatusHTTPVersionNotSupported,
		code == http.StatusVariantAlsoNegotiates,
		code == http.StatusLoopDetected,
		code == http.StatusNotExtended,
		code == http.StatusNetworkAuthenticationRequired:
		// Retrying cannot fix these: they describe the request or the
		// path to the server, not a passing fault.
		return ClassBusiness
	default:
		return ClassServer
	}
}

// classifyError tells a request that never left from one that may have
// been processed, by error type and trace facts, never by message text.
func classifyError(a *AttemptResult) Class {
	if a.Traced && a.Written {
		// Written at least once, even if a later re-send by net/http
		// failed at the dial: the first write may have been applied.
		return ClassMaybeSent
	}
	if neverSent(a.Err) {
		return ClassNotSent
	}
	if a.Traced && !a.Connected {
		// Without a connection nothing can have been written.
		return ClassNotSent
	}
	// Conservatively, any other failure may have reached the provider: a
	// write can be in flight when RoundTrip returns on a timeout.
	return ClassMaybeSent
}

// neverSent reports whether err proves the request never reached the
// provider: name resolution, dialing and TLS handshake failures.
func neverSent(err error) bool {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return true
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return true
	}
	var (
		recErr   tls.RecordHeaderError
		verErr   *tls.CertificateVerificationError
		authErr  x509.UnknownAuthorityError
		hostErr  x509.HostnameError
		certErr  x509.CertificateInvalidError
		alertErr tls.AlertError
	)
	return errors.As(err, &recErr) || errors.As(err, &verErr) ||
		errors.As(err, &authErr) || errors.As(err, &hostErr) ||
		errors.As(err, &certErr) || errors.As(err, &alertErr)
}
