// Package keyedhash names secrets, such as credentials, by a keyed hash:
// HMAC-SHA256 under a process or deployment secret. An unkeyed hash of a
// low-entropy secret (a Basic password, a short API key) can be reversed
// by guessing; a keyed one cannot without the secret, so it may appear in
// a store key, a record, a log line or a metric label. The limiter's
// ByCredential boundary and the idempotency middleware's CredentialTenant
// share this one rule.
package keyedhash

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"sync"
)

// MinKeyLen is the shortest secret accepted: 16 bytes (128 bits), so the
// secret itself cannot be guessed.
const MinKeyLen = 16

// ErrShortKey reports a secret shorter than MinKeyLen.
var ErrShortKey = errors.New("secret shorter than 16 bytes")

// Hasher hashes values under one secret. Its zero value is not usable;
// New returns one. It is safe for concurrent use, and copies share their
// state.
type Hasher struct {
	// macs holds HMACs under the secret, reset and ready: after the
	// first use an HMAC's Reset restores the padded key's hash state
	// instead of hashing the key again, and reusing one spares its
	// allocations.
	macs *sync.Pool
}

// New returns a Hasher keyed by key, which it copies, or an error wrapping
// ErrShortKey.
func New(key []byte) (Hasher, error) {
	if len(key) < MinKeyLen {
		return Hasher{}, fmt.Errorf("%w (got %d bytes)", ErrShortKey, len(key))
	}
	key = append([]byte(nil), key...)
	return Hasher{macs: &sync.Pool{New: func() any { return hmac.New(sha256.New, key) }}}, nil
}

// Sum returns the hex HMAC-SHA256 of value under the secret, cut to n hex
// digits (all 64 when n is zero or larger). domain separates uses, so the
// same credential hashed for two purposes gives unrelated names.
func (h Hasher) Sum(domain, value string, n int) string {
	m := h.macs.Get().(hash.Hash)
	m.Write(append(append(append(make([]byte, 0, len(domain)+1+len(value)), domain...), 0), value...))
	var sum [sha256.Size]byte
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], m.Sum(sum[:0]))
	m.Reset()
	h.macs.Put(m)
	if n <= 0 || n > len(out) {
		n = len(out)
	}
	return string(out[:n])
}
