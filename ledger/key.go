package ledger

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/google/uuid"
)

// Key is the durable identity of one business action. Two requests with
// the same Key are the same action: the second is replayed, held or
// rejected, never executed twice. retrybudget.Action is this type.
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

// actionNamespace is the UUID namespace of idempotency keys. Changing it
// would change every key sent to providers, so it is fixed forever.
var actionNamespace = uuid.MustParse("6f1c2a53-43c7-4c0e-9a8e-7d4b1e1f5a90")

// IdempotencyKey returns the key sent to the provider for k: a name-based
// UUID (RFC 9562 version 5) of the length-prefixed tenant, operation and
// key. Length prefixes make the encoding injective, so ("a:b", "c") and
// ("a", "b:c") differ. A UUID fits every provider's key format and length
// limit. It is a digest of its own, not ID: providers see it, and it must
// stay the same for keys already sent.
func (k Key) IdempotencyKey() string {
	buf := make([]byte, 0, 24+len(k.Tenant)+len(k.Operation)+len(k.Key))
	for _, s := range [...]string{k.Tenant, k.Operation, k.Key} {
		buf = binary.BigEndian.AppendUint64(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	return uuid.NewSHA1(actionNamespace, buf).String()
}

func (k Key) validate() error {
	if k.Key == "" {
		return fmt.Errorf("%w: empty action key", ErrInvalid)
	}
	return nil
}
