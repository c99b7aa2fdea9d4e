package retrybudget

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Identities says whether observers (slogretry.Observer, and otelretry's
// Telemetry) show who and what a call is for. It is the one rule for the
// Transport's outbound events and the idempotency middleware's inbound
// logs.
//
// The zero value, the default, hides them: no tenant, no Action key, no
// idempotency key, and a limiter boundary or budget destination only up to
// its first '#' (the host, without the credential hash
// limiter.ByCredential and ByHeader put after it). A tenant may be a customer's account ID, an action key may
// hold an order or card reference, and a credential hash is a target for
// guessing; logs and telemetry are read by more people, and kept longer,
// than the ledger. The operation, the host, the path and the class still
// say what happened. ShowIdentities true shows them all, for a service
// whose logs are as protected as its ledger.
type Identities struct {
	// ShowIdentities shows tenants, action keys, idempotency keys and
	// whole boundaries. False, the default, hides them.
	ShowIdentities bool
	// OmitPath leaves the URL path out of every record, for providers
	// that put a secret in the path (webhook URLs, bot tokens). False, the
	// default, shows the path.
	OmitPath bool
	// ActionKey is a secret under which logs name an action: the "action"
	// attribute is then a keyed hash of the action's tenant, operation and
	// key (see ActionID), which an operator who holds the secret and knows
	// the action can compute, and nobody else can test guesses against.
	// Nil, the default, leaves "action" out of the logs unless
	// ShowIdentities is set.
	ActionKey []byte
}

// actionIDDomain separates the log name of an action from any other use of
// the same secret.
const actionIDDomain = "retrybudget/log/action/v1"

// ActionID returns how logs name action a: with ShowIdentities, the first
// 16 hex digits of a.ID(), the name of its ledger record; else, with an
// ActionKey, the first 16 hex digits of an HMAC-SHA256 of a.ID() under
// that key; else "" (not shown). a.ID() alone is an unkeyed hash of values
// a caller may guess (a tenant, an order number), so it is never logged
// when identities are hidden.
func (i Identities) ActionID(a Action) string {
	switch {
	case i.ShowIdentities:
		return a.ID()[:16]
	case len(i.ActionKey) > 0:
		m := hmac.New(sha256.New, i.ActionKey)
		m.Write([]byte(actionIDDomain))
		m.Write([]byte{0})
		m.Write([]byte(a.ID()))
		return hex.EncodeToString(m.Sum(nil))[:16]
	}
	return ""
}

// Boundary returns how a limiter boundary or budget destination b is
// shown: whole when identities are shown, else only up to its first '#'.
func (i Identities) Boundary(b string) string {
	if i.ShowIdentities {
		return b
	}
	host, _, _ := strings.Cut(b, "#")
	return host
}

// Value returns v when identities are shown, else "" (not shown).
func (i Identities) Value(v string) string {
	if i.ShowIdentities {
		return v
	}
	return ""
}
