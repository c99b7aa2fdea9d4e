package ledger

import (
	"errors"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/redistest"
)

// keyB is a second action, beside keyA.
var keyB = Key{Tenant: "acme", Operation: "charge", Key: "order-2"}

// TestRedisBodyLikeCiphertextReplaysAsStored pins that whether a stored
// body is encrypted is read from the record, not guessed from the data: a
// store without keys replays a body that starts like a ciphertext exactly
// as it stored it, and a sealed record still never replays its
// ciphertext to a store that cannot open it.
func TestRedisBodyLikeCiphertextReplaysAsStored(t *testing.T) {
	client := redistest.Client(t)
	prefix := redistest.Prefix(t)
	plain := mustRedis(t, client, RedisConfig{Prefix: prefix})
	body := []byte(sealedOutcomePrefix + "a provider's body")
	res, err := plain.Reserve(t.Context(), ReserveRequest{Key: keyA, Fingerprint: fpA})
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Complete(t.Context(), keyA, res.Token, Outcome{Status: 200, Body: body}); err != nil {
		t.Fatal(err)
	}
	got, err := plain.Reserve(t.Context(), ReserveRequest{Key: keyA, Fingerprint: fpA})
	if err != nil || got.Verdict != VerdictReplayed || string(got.Record.Outcome.Body) != string(body) {
		t.Fatalf("replay of a body stored plain: %s %+v, %v", got.Verdict, got.Record.Outcome, err)
	}

	sealed := mustRedis(t, client, RedisConfig{Prefix: prefix, Config: Config{EncryptionKeys: EncryptionKeys{encOld}}})
	res, err = sealed.Reserve(t.Context(), ReserveRequest{Key: keyB, Fingerprint: fpA})
	if err != nil {
		t.Fatal(err)
	}
	if err := sealed.Complete(t.Context(), keyB, res.Token, Outcome{Status: 200, Body: []byte("secret")}); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Get(t.Context(), keyB); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a sealed record read without keys: %v, want ErrCorrupt", err)
	}
}

// TestRedisRecordWithoutEncryptionMarkStillDecodes pins records written
// before stores kept the encryption mark: a sealed body still opens, a
// plain one reads as it is.
func TestRedisRecordWithoutEncryptionMarkStillDecodes(t *testing.T) {
	client := redistest.Client(t)
	prefix := redistest.Prefix(t)
	s := mustRedis(t, client, RedisConfig{Prefix: prefix, Config: Config{EncryptionKeys: EncryptionKeys{encOld}}})
	plain := mustRedis(t, client, RedisConfig{Prefix: prefix})
	for _, tc := range []struct {
		store *Redis
		key   Key
	}{{s, keyA}, {plain, keyB}} {
		res, err := tc.store.Reserve(t.Context(), ReserveRequest{Key: tc.key, Fingerprint: fpA})
		if err != nil {
			t.Fatal(err)
		}
		if err := tc.store.Complete(t.Context(), tc.key, res.Token, Outcome{Status: 200, Body: []byte("body")}); err != nil {
			t.Fatal(err)
		}
		if err := client.HDel(t.Context(), tc.store.keyName(tc.key), "oe").Err(); err != nil {
			t.Fatal(err)
		}
		if rec, err := tc.store.Get(t.Context(), tc.key); err != nil || string(rec.Outcome.Body) != "body" {
			t.Errorf("record without the mark: %+v, %v", rec.Outcome, err)
		}
	}
}

// TestRedisSweepSkipsUndecodableRecord pins that one record Sweep cannot
// decode does not hide the stuck work around it: Sweep lists the stuck
// action and reports the skipped record in an error wrapping ErrCorrupt.
func TestRedisSweepSkipsUndecodableRecord(t *testing.T) {
	client := redistest.Client(t)
	prefix := redistest.Prefix(t)
	s := mustRedis(t, client, RedisConfig{Prefix: prefix})
	const lease = 50 * time.Millisecond
	if _, err := s.Reserve(t.Context(), ReserveRequest{Key: keyA, Fingerprint: fpA, Lease: lease}); err != nil {
		t.Fatal(err)
	}
	// Completed under a key this store does not hold.
	other := mustRedis(t, client, RedisConfig{Prefix: prefix, Config: Config{EncryptionKeys: EncryptionKeys{encOld}}})
	res, err := other.Reserve(t.Context(), ReserveRequest{Key: keyB, Fingerprint: fpA})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Complete(t.Context(), keyB, res.Token, Outcome{Status: 200, Body: []byte("secret")}); err != nil {
		t.Fatal(err)
	}
	redistest.WaitServerTime(t, client, lease)

	stuck, err := s.Sweep(t.Context(), 0)
	if len(stuck) != 1 || stuck[0].Key != keyA {
		t.Fatalf("Sweep listed %d records (%v), want the stuck one", len(stuck), err)
	}
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Sweep: %v, want an error wrapping ErrCorrupt for the skipped record", err)
	}
}
