package limiter

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// DefaultPrefix is the Redis key prefix used when RedisConfig.Prefix is
// empty.
const DefaultPrefix = "retrybudget:limiter:"

// keyDomain separates the hashes in keys from any other SHA-256 use.
const keyDomain = "retrybudget/limiter/key/v1"

// keyspace builds the Redis keys of a boundary.
//
// Every key of one boundary carries the same hash tag, {<hash of the
// boundary>}, so a Redis Cluster keeps them on one slot and one script can
// touch them all. The boundary is hashed, not embedded, for three reasons:
// a custom Boundary function might return a raw credential; a boundary
// containing '{' or '}' would otherwise break the tag; and keys stay short.
type keyspace struct {
	prefix string
}

// newKeyspace validates prefix: a brace in it would move the hash tag off
// the boundary and pin every boundary to one slot.
func newKeyspace(prefix string) (keyspace, error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if strings.ContainsAny(prefix, "{}") {
		return keyspace{}, fmt.Errorf("%w: Prefix %q must not contain '{' or '}'", ErrInvalidConfig, prefix)
	}
	return keyspace{prefix: prefix}, nil
}

// boundaryKeys holds the keys of one decision.
type boundaryKeys struct {
	cooldown string // the pause end, see cooldown.lua
	rate     string // hash of the boundary's limits
	owner    string // hash of the owner's share; empty without an owner
}

// keys returns the keys for boundary and, if owner is not empty, its owner.
func (k keyspace) keys(boundary, owner string) boundaryKeys {
	base := k.prefix + "{" + keyHash(boundary) + "}:"
	bk := boundaryKeys{cooldown: base + "cd", rate: base + "r"}
	if owner != "" {
		bk.owner = base + "o:" + keyHash(owner)
	}
	return bk
}

// keyHash returns 128 bits of SHA-256 over s, hex-encoded.
func keyHash(s string) string {
	h := sha256.New()
	h.Write([]byte(keyDomain))
	h.Write([]byte{0})
	h.Write([]byte(s))
	return hex.EncodeToString(h.Sum(nil)[:16])
}
