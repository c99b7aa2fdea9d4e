package ledger

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/retrybudget/retrybudget/internal/redistest"
)

var (
	encOld = []byte("old-aes-256-key-0123456789abcdef")
	encNew = []byte("new-aes-256-key-0123456789abcdef")
)

// secretOutcome is a response of the kind that must never be stored in the
// clear for 24 hours: a client_secret and a card number in the body,
// and a signed URL in Location.
func secretOutcome() Outcome {
	return Outcome{Status: 201,
		Header: http.Header{"Location": {"https://files.example/receipt?X-Amz-Signature=deadbeefsig"}, "Content-Type": {"application/json"}},
		Body:   []byte(`{"client_secret":"pi_3_secret_abc","detail":"card 4242424242424242 sk_live_51Hxyz"}`)}
}

// TestStoredResponseEncrypted pins that a stored response is never kept in
// the clear when keys are given: with EncryptionKeys the stored headers and body are AES-GCM ciphertext in
// Redis, a replay still returns them, a rotated store (new key first, old
// after) reads old records, and a store without the key cannot.
func TestStoredResponseEncrypted(t *testing.T) {
	client := redistest.Client(t)
	prefix := redistest.Prefix(t)
	open := func(keys ...[]byte) *Redis {
		return mustRedis(t, client, RedisConfig{Prefix: prefix, Config: Config{EncryptionKeys: keys}})
	}
	old := open(encOld)
	res, err := old.Reserve(t.Context(), ReserveRequest{Key: keyA, Fingerprint: fpA})
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Complete(t.Context(), keyA, res.Token, secretOutcome()); err != nil {
		t.Fatal(err)
	}
	raw, err := client.HGetAll(t.Context(), old.keyName(keyA)).Result()
	if err != nil {
		t.Fatal(err)
	}
	for field, v := range raw {
		for _, secret := range []string{"pi_3_secret", "4242424242424242", "sk_live", "X-Amz-Signature", "deadbeefsig"} {
			if strings.Contains(v, secret) {
				t.Errorf("Redis field %s holds %q in the clear", field, secret)
			}
		}
	}
	for name, s := range map[string]*Redis{"same key": old, "rotated": open(encNew, encOld)} {
		rec, err := s.Get(t.Context(), keyA)
		if err != nil || rec.Outcome == nil || string(rec.Outcome.Body) != string(secretOutcome().Body) ||
			rec.Outcome.Header.Get("Location") != secretOutcome().Header.Get("Location") {
			t.Errorf("%s: Get = %+v, %v; want the decrypted response", name, rec.Outcome, err)
		}
	}
	if _, err := open(encNew).Get(t.Context(), keyA); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Get without the old key = %v, want ErrCorrupt", err)
	}
	if _, err := NewRedis(client, RedisConfig{Config: Config{FingerprintKeys: FingerprintKeys{redistest.LedgerKey()},
		EncryptionKeys: EncryptionKeys{[]byte("7 bytes")}}}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NewRedis with a 7-byte AES key = %v, want ErrInvalidConfig", err)
	}
}

// TestHashOnlyModeStoresNoResponse: MaxBody negative and an empty Headers
// list keep only the status, the body's length and its SHA-256: nothing of
// the response's content reaches Redis.
func TestHashOnlyModeStoresNoResponse(t *testing.T) {
	client := redistest.Client(t)
	s := mustRedis(t, client, RedisConfig{Prefix: redistest.Prefix(t), Config: Config{MaxBody: -1, Headers: []string{}}})
	res, err := s.Reserve(t.Context(), ReserveRequest{Key: keyA, Fingerprint: fpA})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(t.Context(), keyA, res.Token, secretOutcome()); err != nil {
		t.Fatal(err)
	}
	raw, _ := client.HGetAll(t.Context(), s.keyName(keyA)).Result()
	for field, v := range raw {
		if strings.Contains(v, "secret") || strings.Contains(v, "X-Amz") {
			t.Errorf("hash-only mode stored %s = %q", field, v)
		}
	}
	if rec, err := s.Get(t.Context(), keyA); err != nil || !rec.Outcome.BodyOmitted || rec.Outcome.Status != 201 {
		t.Errorf("hash-only record %+v, %v", rec.Outcome, err)
	}
}
