package retrybudget

import (
	"context"
	"encoding/binary"
	"errors"
	"net/http"

	"github.com/google/uuid"
)

// Action names one business action, such as "charge order 1234 for tenant
// acme". Every attempt of the action, in this process or in a worker that
// re-submits it after a crash, carries the same idempotency key, derived from
// the Action alone.
type Action struct {
	// Tenant is the account the action is done for. Keys of two tenants
	// never collide, even when Operation and Key are equal.
	Tenant string
	// Operation names the kind of action, such as "charge" or "refund".
	Operation string
	// Key identifies the action within the tenant and operation, such as
	// an order or job id. It must not be empty.
	Key string
}

// ErrInvalidAction is returned when the context carries an Action with an
// empty Key.
var ErrInvalidAction = errors.New("retrybudget: action has an empty key")

// actionNamespace is the UUID namespace of derived keys. Changing it would
// change every derived key, so it is fixed forever.
var actionNamespace = uuid.MustParse("6f1c2a53-43c7-4c0e-9a8e-7d4b1e1f5a90")

// IdempotencyKey returns the key sent to the provider for a: a name-based
// UUID (RFC 9562 version 5) of the length-prefixed tenant, operation and key.
// Length prefixes make the encoding injective, so ("a:b", "c") and ("a",
// "b:c") differ. A UUID fits every provider's key format and length limit.
func (a Action) IdempotencyKey() string {
	buf := make([]byte, 0, 24+len(a.Tenant)+len(a.Operation)+len(a.Key))
	for _, s := range [...]string{a.Tenant, a.Operation, a.Key} {
		buf = binary.BigEndian.AppendUint64(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	return uuid.NewSHA1(actionNamespace, buf).String()
}

type actionCtxKey struct{}

// WithAction returns a context that names the business action of the
// requests made with it. The Transport sends a.IdempotencyKey() in its key
// header, in place of any key the caller or an SDK put there (the
// Observer's KeyReplaced says when), so every attempt and every re-submission
// of the action carries the same key. A caller who wants a key of their own
// makes it the action's Key. The Transport treats the request as safe to
// retry even when its method is not idempotent: attaching an action asserts
// that the provider honours the key (unless Config.OmitKey says the provider
// documents none).
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

// resolveKey decides the idempotency key of one call. An action's derived key
// comes first, replacing any key already in the header (an SDK such as
// stripe-go puts a random one on every POST, which would make a re-submitted
// action a new one at the provider); replaced is that header key, else
// empty. Without an action, a key the caller set is kept as is; else, for a
// method that is not idempotent, one random key shared by every attempt of
// the call. noAction ignores the context's Action (an auxiliary call, such
// as an SDK fetching its OAuth token with the caller's context).
func resolveKey(req *http.Request, header string, noAction bool) (key string, src keySource, replaced string, err error) {
	callerKey := req.Header.Get(header)
	if a, ok := ActionFrom(req.Context()); ok && !noAction {
		if a.Key == "" {
			return "", keyNone, "", ErrInvalidAction
		}
		key = a.IdempotencyKey()
		if callerKey != key {
			replaced = callerKey
		}
		return key, keyAction, replaced, nil
	}
	if callerKey != "" {
		return callerKey, keyCaller, "", nil
	}
	if isIdempotent(req.Method) {
		return "", keyNone, "", nil
	}
	return uuid.NewString(), keyGenerated, "", nil
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
