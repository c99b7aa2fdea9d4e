package limiter

import (
	"fmt"
	"sync"

	"github.com/retrybudget/retrybudget/internal/keyedhash"
)

// DefaultPrefix is the Redis key prefix used when RedisConfig.Prefix is
// empty.
const DefaultPrefix = "retrybudget:limiter:"

// keyDomain and ownerDomain separate the hashes that name a boundary and
// an owner from any other use of the same BoundaryKey.
const (
	keyDomain   = "retrybudget/limiter/key/v1"
	ownerDomain = "retrybudget/limiter/owner/v1"
)

// keyspace builds the Redis keys of a boundary.
//
// Every key of one boundary carries the same hash tag, {<hash of the
// boundary>}, so a Redis Cluster keeps them on one slot and one script can
// touch them all. The boundary is hashed, not embedded, for three reasons:
// a custom Boundary function might return a raw credential; a boundary
// containing '{' or '}' would otherwise break the tag; and keys stay short.
// The hash is an HMAC under the deployment's BoundaryKey: an unkeyed hash
// of a [ByCredential] boundary would let whoever can list Redis keys test
// guessed credentials offline. Owners are named the same way.
//
// Its prefix follows the key-prefix rule (redisstore.Prefix): a brace in it
// would move the hash tag off the boundary and pin every boundary to one
// slot.
type keyspace struct {
	prefix string
	// keyed names boundaries and owners (RedisConfig.BoundaryKey).
	keyed keyedhash.Hasher
}

// newKeyspace names keys under prefix (already checked by
// redisstore.Setup), hashing boundaries and owners under boundaryKey. It
// fails with ErrNoBoundaryKey without one, and with ErrInvalidConfig for
// one shorter than keyedhash.MinKeyLen.
func newKeyspace(prefix string, boundaryKey []byte) (keyspace, error) {
	if len(boundaryKey) == 0 {
		return keyspace{}, fmt.Errorf("%w: set RedisConfig.BoundaryKey to 32 random bytes (RETRYBUDGET_BOUNDARY_KEY, base64), the same on every process", ErrNoBoundaryKey)
	}
	h, err := keyedhash.New(boundaryKey)
	if err != nil {
		return keyspace{}, fmt.Errorf("%w: BoundaryKey is %d bytes: set it to 32 random bytes (RETRYBUDGET_BOUNDARY_KEY, base64), at least 16: %w", ErrInvalidConfig, len(boundaryKey), err)
	}
	return keyspace{prefix: prefix, keyed: h}, nil
}

// base returns the start shared by every key of boundary:
// "<prefix>{<hash of boundary>}:", or for a boundary within a scope (see
// [Within]) "<prefix>{<hash of scope>}:<hash of boundary>:", so that one
// script can read the scope's cooldown with the boundary's own keys: a
// cluster keeps every boundary of a scope on the scope's slot. The key
// suffixes after a plain base ("cd", "r:", "o:", "qh", "qz") never start
// with 32 hex digits and a colon, so the two forms never name one key.
func (k keyspace) base(boundary string) string {
	if scope, ok := scopeOf(boundary); ok {
		return k.prefix + "{" + k.keyed.Sum(keyDomain, scope, 32) + "}:" + k.keyed.Sum(keyDomain, boundary, 32) + ":"
	}
	return k.prefix + "{" + k.keyed.Sum(keyDomain, boundary, 32) + "}:"
}

// scopeCooldown returns the cooldown key of the scope boundary is within:
// the plain cooldown key of the scope as a boundary of its own, which
// Cooldown with the scope sets; boundary's own cooldown key when it is
// within none.
func (k keyspace) scopeCooldown(boundary string) string {
	scope, _ := scopeOf(boundary)
	return k.prefix + "{" + k.keyed.Sum(keyDomain, scope, 32) + "}:" + cooldownSuffix
}

// owner returns the name of an owner (tenant) in keys and in the fair
// queue's entries: 128 bits of its keyed hash, hex-encoded.
func (k keyspace) owner(owner string) string {
	return k.keyed.Sum(ownerDomain, owner, 32)
}

// Key suffixes after base: the cooldown, a boundary limit ("r:" + the
// limit's field) and an owner's share ("o:" + owner hash + ":" + field).
const (
	cooldownSuffix = "cd"
	rateSuffix     = "r:"
	ownerSuffix    = "o:"
)

// maxCachedBoundaries bounds keyCache. A process talks to a handful of
// boundaries, so the bound only matters for a Boundary function that makes
// a new key per request; the cache then starts afresh when full.
const maxCachedBoundaries = 4096

// keyCache remembers the keys of recently decided boundaries: a decision
// otherwise spends about a microsecond hashing a boundary it has hashed
// thousands of times before, a few percent of a loopback round trip.
type keyCache struct {
	// mu guards m.
	mu sync.RWMutex
	m  map[string]boundaryKeys
}

// boundaryKeys are the keys of one boundary: base is shared by all of
// them, keys holds the boundary's cooldown key, its scope's cooldown key
// (the same key again for a boundary within no scope, so that the scripts
// find the limits at one place) and then one key per boundary limit.
// Neither may be modified.
type boundaryKeys struct {
	base string
	keys []string
}

// get returns the keys of boundary, built with build on a miss.
func (c *keyCache) get(boundary string, build func(string) boundaryKeys) boundaryKeys {
	c.mu.RLock()
	bk, ok := c.m[boundary]
	c.mu.RUnlock()
	if ok {
		return bk
	}
	bk = build(boundary)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedBoundaries {
		c.m = make(map[string]boundaryKeys)
	}
	c.m[boundary] = bk
	c.mu.Unlock()
	return bk
}
