package console

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"

	"github.com/retrybudget/retrybudget/ledger"
)

// seal encrypts k for a URL under a key derived from the handler's
// secret: the page after settling finds the settled action again with it,
// since a settled action leaves the held list the reference is looked up
// in. The URL never carries the key in the clear (it ends up in access
// logs and browser history), and a sealed key dies with the handler.
func (h *handler) seal(k ledger.Key) string {
	plain, _ := json.Marshal([]string{k.Tenant, k.Operation, k.Key}) // strings always encode
	return h.sealText(plain, "console-key")
}

// unseal reverses seal.
func (h *handler) unseal(s string) (ledger.Key, error) {
	plain, err := h.openText(s, "console-key")
	var parts []string
	if err != nil || json.Unmarshal(plain, &parts) != nil || len(parts) != 3 {
		return ledger.Key{}, errors.New("console: not a sealed key")
	}
	return ledger.Key{Tenant: parts[0], Operation: parts[1], Key: parts[2]}, nil
}

// sealCursor encrypts a held index's cursor (ledger.HeldPage.Next) for the
// next page's link: a Redis cursor holds an action's Key.ID, an unkeyed
// hash anyone could test guesses of a key against.
func (h *handler) sealCursor(cursor string) string {
	return h.sealText([]byte(cursor), "console-cursor")
}

// unsealCursor reverses sealCursor.
func (h *handler) unsealCursor(s string) (string, error) {
	plain, err := h.openText(s, "console-cursor")
	if err != nil {
		return "", errors.New("console: not a sealed cursor")
	}
	return string(plain), nil
}

// sealText encrypts plain for a URL, bound to what it is (purpose), so
// that one sealed value is never taken for another kind.
func (h *handler) sealText(plain []byte, purpose string) string {
	aead := h.aead()
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, plain, []byte(purpose)))
}

// openText reverses sealText for the same purpose.
func (h *handler) openText(s, purpose string) ([]byte, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	aead := h.aead()
	if err != nil || len(raw) < aead.NonceSize() {
		return nil, errors.New("console: not a sealed value")
	}
	return aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte(purpose))
}

func (h *handler) aead() cipher.AEAD {
	key, _ := base64.RawURLEncoding.DecodeString(h.mac("seal-key")) // 32 bytes: AES-256
	block, _ := aes.NewCipher(key)                                  // a 32-byte key never fails
	aead, _ := cipher.NewGCM(block)                                 // never fails for AES
	return aead
}
