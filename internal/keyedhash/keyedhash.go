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
)

// MinKeyLen is the shortest secret accepted: 16 bytes (128 bits), so the
// secret itself cannot be guessed.
const MinKeyLen = 16

// ErrShortKey reports a secret shorter than MinKeyLen.
var ErrShortKey = errors.New("secret shorter than 16 bytes")

// Hasher hashes values under one secret. Its zero value is not usable;
// New returns one.
type Hasher struct {
	key []byte
}

// New returns a Hasher keyed by key, which it copies, or an error wrapping
// ErrShortKey.
func New(key []byte) (Hasher, error) {
	if len(key) < MinKeyLen {
		return Hasher{}, fmt.Errorf("%w (got %d bytes)", ErrShortKey, len(key))
	}
	return Hasher{key: append([]byte(nil), key...)}, nil
}

// Sum returns the hex HMAC-SHA256 of value under the secret, cut to n hex
// digits (all 64 when n is zero or larger). domain separates uses, so the
// same credential hashed for two purposes gives unrelated names.
func (h Hasher) Sum(domain, value string, n int) string {
	m := hmac.New(sha256.New, h.key)
	m.Write([]byte(domain))
	m.Write([]byte{0})
	m.Write([]byte(value))
	s := hex.EncodeToString(m.Sum(nil))
	if n > 0 && n < len(s) {
		s = s[:n]
	}
	return s
}
