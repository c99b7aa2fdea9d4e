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
// documents none). Each redirect hop that http.Client follows runs under an
// action derived from a, with a record and a key of its own (see
// docs/ledger.md, "Redirects").
func WithAction(ctx context.Context, a Action) context.Context {
	return context.WithValue(ctx, actionCtxKey{}, a)
}

// ActionFrom returns the Action attached to ctx by WithAction.
func ActionFrom(ctx context.Context) (Action, bool) {
	a, ok := ctx.Value(actionCtxKey{}).(Action)
	return a, ok
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
