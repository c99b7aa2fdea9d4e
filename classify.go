package retrybudget

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/retrybudget/retrybudget/internal/retryafter"
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
	// not idempotent, where the difference decides whether to retry.
	Traced bool
	// Connected reports that the attempt obtained a connection.
	Connected bool
	// Written reports that the request was written (fully or partly).
	Written bool
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
type DefaultClassifier struct{}

// Classify implements Classifier.
func (DefaultClassifier) Classify(a *AttemptResult) Classification {
	if a.Response == nil {
		return Classification{Class: classifyError(a)}
	}
	c := Classification{Class: ClassifyStatus(a.Response.StatusCode)}
	if c.Class == ClassSuccess {
		return c
	}
	if at, ok := retryafter.Parse(a.Response.Header.Get("Retry-After"), a.Now); ok {
		c.RetryAt = at
	}
	c.Problem = peekProblem(a.Response)
	return c
}

// ClassifyStatus maps an HTTP status code to its Class.
func ClassifyStatus(code int) Class {
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
