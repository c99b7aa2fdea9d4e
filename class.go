package retrybudget

// Class is the kind of result one attempt produced. The Transport decides
// whether and when to retry from the class, the request's method and whether
// the request carries an idempotency key.
type Class int

const (
	// ClassSuccess is a response the caller should act on as the provider's
	// answer: 1xx, 2xx and 3xx.
	ClassSuccess Class = iota
	// ClassNotSent is a transport failure before the request left the
	// client (DNS, dial, connection refused, TLS handshake). The provider
	// cannot have acted on it, so it is safe to retry for any method.
	ClassNotSent
	// ClassMaybeSent is a transport failure after the request was written,
	// or an attempt that timed out: the provider may have acted on it. It is
	// retried only for idempotent methods or keyed requests.
	ClassMaybeSent
	// ClassCapacity is the provider saying "not now": 429 (RFC 6585), 503,
	// 408 and 425. It is retried after max(backoff, Retry-After).
	ClassCapacity
	// ClassServer is a provider fault (500, 502, 504 and other 5xx that may
	// be transient). The request may have had an effect, so it is retried
	// only for idempotent methods or keyed requests.
	ClassServer
	// ClassBusiness is the provider rejecting the request itself
	// (validation, permission, conflict, not found: every other 4xx, and
	// 5xx codes that retrying cannot fix), and a request the Transport
	// refuses as invalid before sending (ErrInvalidAction). It is never
	// retried.
	ClassBusiness
)

var classNames = [...]string{
	ClassSuccess:   "success",
	ClassNotSent:   "transport-not-sent",
	ClassMaybeSent: "transport-maybe-sent",
	ClassCapacity:  "capacity",
	ClassServer:    "server",
	ClassBusiness:  "business",
}

// String returns the class name used in logs, metrics and errors.
func (c Class) String() string {
	if c >= 0 && int(c) < len(classNames) {
		return classNames[c]
	}
	return "unknown"
}

// retryable reports whether the class may be retried at all, given whether
// the request is safe to repeat (idempotent method or keyed).
func (c Class) retryable(repeatable bool) bool {
	switch c {
	case ClassNotSent, ClassCapacity:
		return true
	case ClassMaybeSent, ClassServer:
		return repeatable
	default:
		return false
	}
}

// mayHaveApplied reports whether an attempt of this class may have caused an
// effect at the provider. Capacity answers are taken as not processed (RFC
// 6585 §4 describes 429 as a refusal; 503 means the server could not handle
// the request).
func (c Class) mayHaveApplied() bool {
	switch c {
	case ClassSuccess, ClassMaybeSent, ClassServer:
		return true
	default:
		return false
	}
}
