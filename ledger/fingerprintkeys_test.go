package ledger

import (
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/retrybudget/retrybudget/internal/redistest"
)

var (
	deploymentA = []byte("deployment-A-fingerprint-key-01")
	deploymentB = []byte("deployment-B-fingerprint-key-02")
)

// TestStoredFingerprintKeyedPerDeployment pins that a store keeps a
// fingerprint keyed per deployment, never the bare SHA-256 of the request's
// canonical form, from which a card number and CVC in the body can be
// recovered by guessing. What a store keeps is an HMAC under the
// deployment's key: unequal to the bare fingerprint, and different under
// another key.
func TestStoredFingerprintKeyedPerDeployment(t *testing.T) {
	fp := Fingerprint("POST", nil, nil, nil, []byte("number=4242424242424242&cvc=123"))
	stored := func(s Store) string {
		t.Helper()
		res, err := s.Reserve(t.Context(), ReserveRequest{Key: keyA, Fingerprint: fp})
		if err != nil {
			t.Fatal(err)
		}
		return res.Record.Fingerprint
	}
	client := redistest.Client(t)
	for name, mk := range map[string]func(key []byte) Store{
		"memory": func(key []byte) Store {
			return NewMemory(MemoryConfig{Config: Config{FingerprintKeys: FingerprintKeys{key}}})
		},
		"redis": func(key []byte) Store {
			s, err := NewRedis(client, RedisConfig{Prefix: redistest.Prefix(t), Config: Config{FingerprintKeys: FingerprintKeys{key}}})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	} {
		t.Run(name, func(t *testing.T) {
			a, b := stored(mk(deploymentA)), stored(mk(deploymentB))
			if a == fp || strings.Contains(a, fp) || a == b || !strings.HasPrefix(a, "hmac-sha256:") {
				t.Errorf("stored %q and %q for fingerprint %q: want two different HMACs, neither the bare fingerprint", a, b, fp)
			}
		})
	}
	t.Run("memory without keys", func(t *testing.T) {
		a, b := stored(NewMemory(MemoryConfig{})), stored(NewMemory(MemoryConfig{}))
		if a == fp || a == b {
			t.Errorf("two keyless Memory stores kept %q and %q: want a random key each", a, b)
		}
	})
}

// TestRedisRequiresFingerprintKey: a store shared between processes
// refuses to be built without a key, and a short key.
func TestRedisRequiresFingerprintKey(t *testing.T) {
	client := redistest.Client(t)
	if _, err := NewRedis(client, RedisConfig{}); !errors.Is(err, ErrNoFingerprintKey) {
		t.Errorf("NewRedis without a key: %v, want ErrNoFingerprintKey", err)
	}
	if _, err := NewRedis(client, RedisConfig{Config: Config{FingerprintKeys: FingerprintKeys{[]byte("short")}}}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NewRedis with a 5-byte key: %v, want ErrInvalid", err)
	}
}

// TestFingerprintKeyRotation: with the new key first and the old one
// after it, a retry of an action recorded under the old key still
// replays, a different request still conflicts, and new actions are
// sealed under the new key, which a store holding only the new key reads.
func TestFingerprintKeyRotation(t *testing.T) {
	client := redistest.Client(t)
	prefix := redistest.Prefix(t)
	open := func(keys ...[]byte) *Redis {
		s, err := NewRedis(client, RedisConfig{Prefix: prefix, Config: Config{FingerprintKeys: keys}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	old, rotated, only := open(deploymentA), open(deploymentB, deploymentA), open(deploymentB)
	res, err := old.Reserve(t.Context(), ReserveRequest{Key: keyA, Fingerprint: fpA})
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Complete(t.Context(), keyA, res.Token, Outcome{Status: 201}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		s    *Redis
		key  Key
		fp   string
		want Verdict
	}{
		{rotated, keyA, fpA, VerdictReplayed},
		{rotated, keyA, fpB, VerdictConflict},
		{only, keyA, fpA, VerdictConflict}, // the old key dropped too early
		{rotated, Key{Tenant: "acme", Operation: "charge", Key: "order-2"}, fpA, VerdictCreated},
		{only, Key{Tenant: "acme", Operation: "charge", Key: "order-2"}, fpA, VerdictPending},
	} {
		got, err := tt.s.Reserve(t.Context(), ReserveRequest{Key: tt.key, Fingerprint: tt.fp})
		if err != nil {
			t.Fatal(err)
		}
		if got.Verdict != tt.want {
			t.Errorf("%s %s: %s, want %s", tt.key.Key, tt.fp, got.Verdict, tt.want)
		}
	}
}

// TestFingerprintKeysCandidates checks the pieces a store composes:
// sealing is idempotent, every candidate is sealed, and a bare fingerprint
// of a record written before keys were used matches nothing.
func TestFingerprintKeysCandidates(t *testing.T) {
	k := FingerprintKeys{deploymentB, deploymentA}
	s := k.Seal(fpA)
	if onlyB := (FingerprintKeys{deploymentB}); k.Seal(s) != s || onlyB.Seal(fpA) != s {
		t.Error("Seal is not idempotent, or does not seal under the first key")
	}
	sealedA := FingerprintKeys{deploymentA}.Seal(fpA)
	if c := k.Candidates(fpA); len(c) != 2 || c[0] != s || c[1] != sealedA {
		t.Errorf("Candidates = %q", c)
	}
	if k.Match(fpA, fpA) == fpA || k.Match(s, fpB) == s || k.Match(s, fpA) != s {
		t.Error("Match accepts a wrong or bare fingerprint, or refuses a sealed one")
	}
	if err := (FingerprintKeys{}).Validate(); !errors.Is(err, ErrNoFingerprintKey) {
		t.Errorf("Validate(empty) = %v", err)
	}
}

// A constructor's error says "ledger:" once: NewRedis without the key
// reads "NewRedis: ledger: invalid config: ...", not the prefix twice.
func TestNewRedisErrorNamesThePackageOnce(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer client.Close()
	_, err := NewRedis(client, RedisConfig{AllowEviction: true})
	if !errors.Is(err, ErrNoFingerprintKey) || strings.Count(err.Error(), "ledger:") != 1 {
		t.Fatalf("NewRedis without a fingerprint key: %v; want ErrNoFingerprintKey, saying \"ledger:\" once", err)
	}
}
