package ledger

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"fmt"
)

// sealedOutcomePrefix starts a stored response part encrypted under
// Config.EncryptionKeys.
const sealedOutcomePrefix = "rbenc1:"

// EncryptionKeys are AES keys (16, 24 or 32 bytes: AES-128, -192 or -256)
// with which a store shared between processes encrypts the response parts
// it keeps, the stored headers and body, with AES-GCM: whoever reads the
// store without a key sees the status, the body's length and SHA-256 (for
// RFC 9530 Repr-Digest on replays of omitted bodies), but not a
// client_secret in a body nor a signed URL in a Location header. Each
// ciphertext is bound to its record and field, so it cannot be moved to
// another record.
//
// Rotation, as with FingerprintKeys: the first key encrypts, every key
// decrypts; drop an old key once a retention has passed. A part stored
// before keys were used is read as it is.
//
// Whether a part is encrypted is kept in the record beside it, not read
// from the data: a store records it with each outcome and reads it back
// with OpenStored, so a body that happens to start like a ciphertext is
// replayed as it was stored. Open serves records written before stores
// kept that mark.
type EncryptionKeys [][]byte

// Validate returns nil when every key is 16, 24 or 32 bytes long, and
// otherwise an error wrapping ErrInvalidConfig. No keys is valid: nothing
// is encrypted.
func (k EncryptionKeys) Validate() error {
	for i, key := range k {
		if _, err := aes.NewCipher(key); err != nil {
			return fmt.Errorf("%w: EncryptionKeys[%d] is %d bytes: set it to 32 random bytes (RETRYBUDGET_ENCRYPTION_KEYS, base64), or 16 or 24", ErrInvalidConfig, i, len(key))
		}
	}
	return nil
}

// Seal encrypts plaintext, the field of record k, under the first key, and
// returns it unchanged when there are no keys. A store calls it on the
// stored headers (field "headers") and body (field "body") before writing
// them.
func (k EncryptionKeys) Seal(rec Key, field string, plaintext []byte) ([]byte, error) {
	if len(k) == 0 {
		return plaintext, nil
	}
	aead, err := newGCM(k[0])
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce) // never fails (crypto/rand)
	out := append([]byte(sealedOutcomePrefix), nonce...)
	return aead.Seal(out, nonce, plaintext, associated(rec, field)), nil
}

// Open reverses Seal for a part whose record does not say whether it was
// encrypted (written before stores kept the mark; see OpenStored): data
// that starts like Seal's output is taken as sealed, anything else is
// returned as it is. It fails with an error wrapping ErrCorrupt when no
// key opens sealed data, so a ciphertext is never returned as a
// plaintext.
func (k EncryptionKeys) Open(rec Key, field string, data []byte) ([]byte, error) {
	if !bytes.HasPrefix(data, []byte(sealedOutcomePrefix)) {
		return data, nil
	}
	return k.OpenStored(rec, field, data, true)
}

// OpenStored reverses Seal for a part whose record says how it was
// stored: sealed reports that Seal encrypted it. A plain part is returned
// as it is, whatever it starts with. A sealed one is opened with every key
// in turn; when none opens it, OpenStored fails with an error wrapping
// ErrCorrupt.
func (k EncryptionKeys) OpenStored(rec Key, field string, data []byte, sealed bool) ([]byte, error) {
	if !sealed {
		return data, nil
	}
	rest, ok := bytes.CutPrefix(data, []byte(sealedOutcomePrefix))
	if !ok {
		return nil, fmt.Errorf("%w: stored %s of action %s is marked encrypted but is not", ErrCorrupt, field, rec.short())
	}
	for _, key := range k {
		aead, err := newGCM(key)
		if err != nil || len(rest) < aead.NonceSize() {
			continue
		}
		nonce, ct := rest[:aead.NonceSize()], rest[aead.NonceSize():]
		if p, err := aead.Open(nil, nonce, ct, associated(rec, field)); err == nil {
			return p, nil
		}
	}
	return nil, fmt.Errorf("%w: stored %s of action %s opens with none of the encryption keys", ErrCorrupt, field, rec.short())
}

func newGCM(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("%w: encryption key: %w", ErrInvalidConfig, err)
	}
	return cipher.NewGCM(b)
}

// associated binds a ciphertext to its record and field.
func associated(rec Key, field string) []byte {
	return []byte("retrybudget-ledger-v1\x00" + rec.ID() + "\x00" + field)
}
