package budget

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/retrybudget/retrybudget/internal/keyedhash"
)

// A key is the prefix and a hash tag of 128 bits of hex, whatever the
// destination holds: braces cannot break the tag and a credential in a
// custom destination never reaches Redis.
func TestDestKey(t *testing.T) {
	shape := regexp.MustCompile(`^p:\{[0-9a-f]{32}\}$`)
	seen := map[string]string{}
	for _, dest := range []string{"", "api.example.com", "api.example.com#sk_live_s3cret", "{x}", "a}b{c"} {
		k := destKey(testKeyed, "p:", dest)
		if !shape.MatchString(k) {
			t.Errorf("destKey(%q) = %q; want p:{<32 hex>}", dest, k)
		}
		if dest != "" && strings.Contains(k, dest) {
			t.Errorf("destKey(%q) = %q holds the destination", dest, k)
		}
		if other, dup := seen[k]; dup {
			t.Errorf("destinations %q and %q share key %q", dest, other, k)
		}
		seen[k] = dest
		if destKey(testKeyed, "p:", dest) != k {
			t.Errorf("destKey(%q) is not stable", dest)
		}
	}
}

// Destination names are HMACs under the deployment's DestinationKey: the
// same destination gets another name under another secret, and no name is
// the plain SHA-256 that whoever lists Redis keys could recompute from a
// guessed credential.
func TestDestKeyIsKeyedByTheDeploymentSecret(t *testing.T) {
	other, err := keyedhash.New([]byte("another-deployment-secret-000"))
	if err != nil {
		t.Fatal(err)
	}
	const dest = "api.example.com#hunter2"
	a, b := destKey(testKeyed, "p:", dest), destKey(other, "p:", dest)
	if a == b {
		t.Fatalf("two secrets name %q alike: %q", dest, a)
	}
	h := sha256.New()
	h.Write([]byte("retrybudget/budget/key/v1"))
	h.Write([]byte{0})
	h.Write([]byte(dest))
	if unkeyed := "p:{" + hex.EncodeToString(h.Sum(nil)[:16]) + "}"; a == unkeyed {
		t.Fatalf("destKey(%q) = %q is the unkeyed hash", dest, a)
	}
}

// A shared budget needs the secret: without one, or with one too short to
// resist guessing, NewRedis refuses to start.
func TestNewRedisNeedsADestinationKey(t *testing.T) {
	if _, err := NewRedis(unreachable(t), RedisConfig{}); !errors.Is(err, ErrNoDestinationKey) || !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("NewRedis without DestinationKey = %v; want ErrNoDestinationKey", err)
	}
	if _, err := NewRedis(unreachable(t), RedisConfig{DestinationKey: []byte("short")}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("NewRedis with a 5-byte DestinationKey = %v; want ErrInvalidConfig", err)
	}
}
