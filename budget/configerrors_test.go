package budget

import (
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestConfigErrorsSayWhatToSet checks that NewRedis refuses a bad client or
// RedisConfig with ErrInvalidConfig and a message naming what to set and a
// value that works. NewRedis does not contact Redis.
func TestConfigErrorsSayWhatToSet(t *testing.T) {
	key := make([]byte, 32)
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { rdb.Close() })
	for _, tt := range []struct {
		name  string
		rdb   redis.UniversalClient
		cfg   RedisConfig
		words []string
	}{
		{"nil client", nil, RedisConfig{DestinationKey: key}, []string{"Redis client", "redis.NewClient", "ContextTimeoutEnabled: true"}},
		{"prefix", rdb, RedisConfig{DestinationKey: key, Prefix: "}"}, []string{"RedisConfig.Prefix", `"myapp:budget:"`}},
		{"short key", rdb, RedisConfig{DestinationKey: []byte("x")}, []string{"RedisConfig.DestinationKey", "RETRYBUDGET_DESTINATION_KEY", "32 random bytes"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewRedis(tt.rdb, tt.cfg)
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error %v; want it to wrap ErrInvalidConfig", err)
			}
			for _, w := range tt.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
}
