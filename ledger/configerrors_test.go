package ledger

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestConfigErrorsSayWhatToSet checks that a bad RedisConfig or Config
// field fails with the package's sentinel and a message that names the
// field as the caller writes it and a value that works. Nothing here
// contacts Redis: NewRedis validates first.
func TestConfigErrorsSayWhatToSet(t *testing.T) {
	keys := FingerprintKeys{make([]byte, 32)}
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	t.Cleanup(func() { cluster.Close() })
	single := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { single.Close() })
	newRedis := func(c redis.UniversalClient, cfg RedisConfig) error {
		cfg.FingerprintKeys = keys
		_, err := NewRedis(c, cfg)
		return err
	}
	_, _, leaseErr := Config{Lease: -time.Second}.Durations(0, 0)
	_, _, retentionErr := Config{Retention: 1500 * time.Microsecond}.Durations(0, 0)
	_, settleErr := SettleTime(-time.Second, time.Minute)
	for _, tt := range []struct {
		name  string
		err   error
		is    error
		words []string
	}{
		{"nil client", newRedis(nil, RedisConfig{}), ErrInvalidConfig, []string{"Redis client", "redis.NewClient", "ContextTimeoutEnabled: true"}},
		{"prefix", newRedis(single, RedisConfig{Prefix: "a{b}"}), ErrInvalidConfig, []string{"RedisConfig.Prefix", `"myapp:ledger:"`}},
		{"wait replicas", newRedis(cluster, RedisConfig{WaitReplicas: 1}), ErrInvalidConfig, []string{"RedisConfig.WaitReplicas", "*redis.Client", "set WaitReplicas to 0"}},
		{"lease", leaseErr, ErrInvalid, []string{"Config.Lease", "ReserveRequest.Lease", "whole milliseconds", "such as 30s"}},
		{"retention", retentionErr, ErrInvalid, []string{"Config.Retention", "ReserveRequest.Retention", "whole milliseconds", "such as 24h"}},
		{"settle", settleErr, ErrInvalid, []string{"ReserveRequest.Settle", "whole milliseconds", "zero means the lease"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, tt.is) {
				t.Fatalf("error %v; want it to wrap %v", tt.err, tt.is)
			}
			for _, w := range tt.words {
				if !strings.Contains(tt.err.Error(), w) {
					t.Errorf("%q does not say %q", tt.err, w)
				}
			}
		})
	}
}
