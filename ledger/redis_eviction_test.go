package ledger

import (
	"errors"
	"strings"
	"testing"

	"github.com/retrybudget/retrybudget/internal/redistest"
)

// TestNewRedisRefusesEvictingRedis pins that a store is not built on a
// Redis that may evict its records, nor on one that will not say whether
// it may, unless the caller opts out with AllowEviction; the error names
// the opt-out.
func TestNewRedisRefusesEvictingRedis(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"volatile-lru", []string{"--maxmemory", "64mb", "--maxmemory-policy", "volatile-lru"}},
		{"allkeys-lru", []string{"--maxmemory-policy", "allkeys-lru"}},
		{"CONFIG refused", []string{"--rename-command", "CONFIG", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := redistest.StartWith(t, tc.args...).Client(t)
			keys := Config{FingerprintKeys: FingerprintKeys{redistest.LedgerKey()}}
			_, err := NewRedis(client, RedisConfig{Config: keys})
			if !errors.Is(err, ErrEviction) || !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "AllowEviction") {
				t.Fatalf("NewRedis: %v; want ErrEviction naming AllowEviction", err)
			}
			if _, err := NewRedis(client, RedisConfig{Config: keys, AllowEviction: true}); err != nil {
				t.Fatalf("NewRedis with AllowEviction: %v", err)
			}
		})
	}
	t.Run("noeviction", func(t *testing.T) {
		client := redistest.StartWith(t, "--maxmemory", "64mb", "--maxmemory-policy", "noeviction").Client(t)
		mustRedis(t, client, RedisConfig{})
	})
}
