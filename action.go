package retrybudget

import (
	"context"
	"net/http"

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
// header, in place of any key the caller or an SDK put there (the
// the Observer's AttemptEvent.Replaced says when), so every attempt and every re-submission
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

// resolveKey decides the idempotency key of one call whose key header
// holds callerKey (empty when none), under action when hasAction. An
// action's derived key comes first, replacing any key already in the header
// (an SDK such as stripe-go puts a random one on every POST, which would make
// a re-submitted action a new one at the provider); replaced is that header
// key, else empty. Without an action, a key the caller set is kept as is;
// else, for a method that is not idempotent, one random key shared by every
// attempt of the call. The caller leaves hasAction false to ignore the
// context's Action (an auxiliary call, such as an SDK fetching its OAuth
// token with the caller's context).
func (t *Transport) resolveKey(method, callerKey string, action Action, hasAction bool) (key string, src keySource, replaced string, err error) {
	if hasAction {
		if action.Key == "" {
			return "", keyNone, "", ErrInvalidAction
		}
		key = action.IdempotencyKey()
		if callerKey != key {
			replaced = callerKey
		}
		return key, keyAction, replaced, nil
	}
	if callerKey != "" {
		return callerKey, keyCaller, "", nil
	}
	if isIdempotent(method) {
		return "", keyNone, "", nil
	}
	return t.keys.key(), keyGenerated, "", nil
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
