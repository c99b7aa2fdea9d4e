package idempotency

import "errors"

var (
	// ErrMalformedKey reports an Idempotency-Key field value that is neither
	// a Structured Field String nor a bare token, is empty, is longer than
	// allowed, or was sent on more than one field line. ParseKey wraps it
	// with the reason.
	ErrMalformedKey = errors.New("idempotency: malformed idempotency key")
	// ErrNoAction reports a context that carries no inbound action: the
	// request did not pass through the middleware, or its method is not
	// guarded, or it carried no key while Config.KeyOptional is set.
	ErrNoAction = errors.New("idempotency: no inbound action in the context")
	// ErrEmptyStep reports an empty step name given to WithStep or
	// Outbound: the derived action would be hard to tell from its inbound
	// action in records and logs.
	ErrEmptyStep = errors.New("idempotency: empty step name")
	// ErrInvalidConfig reports a helper given settings it cannot work
	// with, such as CredentialTenant with a short secret.
	ErrInvalidConfig = errors.New("idempotency: invalid config")
)
