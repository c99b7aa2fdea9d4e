package ledger

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// MinFingerprintKeyLen is the shortest fingerprint key accepted: 16 bytes.
const MinFingerprintKeyLen = 16

// fingerprintKeyEnv is the environment variable the docs keep the
// fingerprint key in (and the ledger CLIs read, ledgercli.FingerprintKeyEnv).
const fingerprintKeyEnv = "RETRYBUDGET_FINGERPRINT_KEY"

// sealedPrefix starts every fingerprint a store keeps; a fingerprint that
// carries it is already sealed (a Record's, handed back by Reconcile).
const sealedPrefix = "hmac-sha256:"

// FingerprintKeys are the per-deployment secrets a store seals request
// fingerprints with before keeping them: what it keeps is
// "hmac-sha256:" and the hex HMAC-SHA256 of the fingerprint under the first
// key. A bare SHA-256 of a request is no secret: from what a stored
// response reveals (a card's BIN, last four digits and expiry), the rest
// of a card number and its CVC in the body can be found by trying every
// candidate against it in seconds. Under a key that the store's readers do
// not hold, they cannot.
//
// Rotation: put the new key first and keep the old ones after it. The
// first key seals new records; every key verifies, so a retry of an
// action recorded under an old key still matches. Drop an old key once the
// retention (24 hours by default) has passed since it stopped being first.
//
// A bare fingerprint never leaves the process: a Redis script's arguments
// and a PostgreSQL statement's parameters reach MONITOR, SLOWLOG and
// statement logs, and a bare hash there is as good as the card data it
// covers. So a record written before keys were used (one holding a bare
// fingerprint) matches no request: a retry of such an action is refused as
// a conflict, never sent. Turn keys on when no action is in flight, or
// accept such conflicts for one retention.
//
// Every instance sharing a store must hold the same keys. Stores shared
// between processes (Redis, PostgreSQL) require at least one key: their
// constructors call Validate. A Memory store without keys draws a random
// one when it is created.
type FingerprintKeys [][]byte

// Validate returns nil when k holds at least one key and every key is at
// least MinFingerprintKeyLen bytes long, and otherwise an error wrapping
// ErrNoFingerprintKey or ErrInvalidConfig.
func (k FingerprintKeys) Validate() error {
	if len(k) == 0 {
		return fmt.Errorf("%w: set Config.FingerprintKeys to 32 random bytes (%s, base64), the same on every process", ErrNoFingerprintKey, fingerprintKeyEnv)
	}
	for i, key := range k {
		switch {
		case len(key) == 0:
			return fmt.Errorf("%w: FingerprintKeys[%d] is empty: set it to 32 random bytes (%s, base64)", ErrInvalidConfig, i, fingerprintKeyEnv)
		case len(key) < MinFingerprintKeyLen:
			return fmt.Errorf("%w: FingerprintKeys[%d] is %d bytes: set it to 32 random bytes (%s, base64), at least %d", ErrInvalidConfig, i, len(key), fingerprintKeyEnv, MinFingerprintKeyLen)
		}
	}
	return nil
}

// Seal returns the form of fingerprint fp a store keeps: sealed under the
// first key. A fingerprint already sealed is returned as it is, and so is
// fp when k is empty (only a store that validated k calls Seal).
func (k FingerprintKeys) Seal(fp string) string {
	if len(k) == 0 || strings.HasPrefix(fp, sealedPrefix) {
		return fp
	}
	return seal(k[0], fp)
}

// Candidates returns every stored form that matches fingerprint fp: fp
// sealed under each key, first key first, or fp alone when it is already
// sealed. A store compares the stored fingerprint with each; Redis passes
// them to its script, SQL can use "= ANY". fp itself is never among them
// when it is bare, since stores send the candidates over the wire.
func (k FingerprintKeys) Candidates(fp string) []string {
	if strings.HasPrefix(fp, sealedPrefix) {
		return []string{fp}
	}
	out := make([]string, 0, len(k))
	for _, key := range k {
		out = append(out, seal(key, fp))
	}
	return out
}

// Match returns the stored form to decide on: stored itself when it is one
// of fp's candidates, else fp sealed (which differs from stored, so
// Resolve sees a conflict).
func (k FingerprintKeys) Match(stored, fp string) string {
	return matchSealed(stored, k.sealing(fp))
}

// sealedFingerprint is a request fingerprint sealed once for a store
// call: what Seal returns, and what Candidates returns.
type sealedFingerprint struct {
	stored     string
	candidates []string
}

// sealing seals fp under each key once, for a call that needs both its
// stored form and its candidates.
func (k FingerprintKeys) sealing(fp string) sealedFingerprint {
	s := sealedFingerprint{stored: fp, candidates: k.Candidates(fp)}
	if len(k) > 0 && !strings.HasPrefix(fp, sealedPrefix) {
		s.stored = s.candidates[0]
	}
	return s
}

// matchSealed is Match for a fingerprint already sealed.
func matchSealed(stored string, fp sealedFingerprint) string {
	for _, c := range fp.candidates {
		if hmac.Equal([]byte(c), []byte(stored)) {
			return stored
		}
	}
	return fp.stored
}

func seal(key []byte, fp string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(fp))
	return sealedPrefix + hex.EncodeToString(m.Sum(nil))
}
