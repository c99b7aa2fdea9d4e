package retrybudget

import (
	"context"
	"net/http"

	"github.com/google/uuid"

	"github.com/retrybudget/retrybudget/ledger"
)

// Action names one business action, such as "charge order 1234 for tenant
// acme". Every attempt of the action, in this process or in a worker that
// re-submits it after a crash, carries the same idempotency key, derived from
// the Action alone (Action.IdempotencyKey), and the action ledger keeps one
// record per Action. It is the ledger's Key: one identity for the provider's
// key and the ledger's record.
type Action = ledger.Key

type actionCtxKey struct{}

// WithAction returns a context that names the business action of the
// requests made with it. The Transport sends a.IdempotencyKey() in its key
// header, and treats the request as safe to retry even when its method is not
// idempotent: attaching an action asserts that the provider honours the key.
func WithAction(ctx context.Context, a Action) context.Context {
	return context.WithValue(ctx, actionCtxKey{}, a)
}

// ActionFrom returns the Action attached to ctx by WithAction.
func ActionFrom(ctx context.Context) (Action, bool) {
	a, ok := ctx.Value(actionCtxKey{}).(Action)
	return a, ok
}

// keySource tells where a request's idempotency key came from.
type keySource int

const (
	keyNone      keySource = iota // no key: an idempotent method without an action
	keyCaller                     // the caller set the header itself
	keyAction                     // derived from the Action in the context
	keyGenerated                  // a random UUID for this call only
)

// resolveKey decides the idempotency key of one call. A key the caller set is
// kept as is; else an action's derived key; else, for a method that is not
// idempotent, one random key shared by every attempt of the call.
func resolveKey(req *http.Request, header string) (string, keySource, error) {
	if k := req.Header.Get(header); k != "" {
		return k, keyCaller, nil
	}
	if a, ok := ActionFrom(req.Context()); ok {
		if a.Key == "" {
			return "", keyNone, ErrInvalidAction
		}
		return a.IdempotencyKey(), keyAction, nil
	}
	if isIdempotent(req.Method) {
		return "", keyNone, nil
	}
	return uuid.NewString(), keyGenerated, nil
}

// isIdempotent reports whether method is idempotent (RFC 9110 §9.2.2).
func isIdempotent(method string) bool {
	switch method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions,
		http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}
