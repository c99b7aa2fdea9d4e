package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
)

// Key is the durable identity of one business action. Two requests with
// the same Key are the same action: the second is replayed, held or
// rejected, never executed twice.
//
// The fields mirror retrybudget.Action one for one, so a conversion is a
// plain struct conversion: ledger.Key(action).
type Key struct {
	// Tenant scopes the action to one customer or account. Zero means a
	// single-tenant caller; it is still part of the identity.
	Tenant string
	// Operation names what the action does, such as "charge" or "refund".
	// Zero is allowed but makes keys from different operations collide.
	Operation string
	// Key is the caller's idempotency key for the action. It must not be
	// empty.
	Key string
}

// ID returns the hex SHA-256 of the length-prefixed tenant, operation and
// key. Stores name records by ID so raw values, which may embed secrets,
// never appear in a Redis key name, a log line or an error message. The
// length prefixes keep ("a|b", "c") and ("a", "b|c") apart.
func (k Key) ID() string {
	h := sha256.New()
	for _, s := range [...]string{k.Tenant, k.Operation, k.Key} {
		h.Write(strconv.AppendInt(nil, int64(len(s)), 10))
		h.Write([]byte{':'})
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// short is the first 12 hex digits of ID, enough to find an action in
// logs without printing its raw identity.
func (k Key) short() string { return k.ID()[:12] }

func (k Key) validate() error {
	if k.Key == "" {
		return fmt.Errorf("%w: empty action key", ErrInvalid)
	}
	return nil
}
