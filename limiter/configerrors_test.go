package limiter

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestConfigErrorsSayWhatToSet checks that each constructor error for a bad
// setting names the field as the caller writes it and a value that works,
// and still wraps ErrInvalidConfig. No Redis is contacted: NewRedis
// validates before it sends anything.
func TestConfigErrorsSayWhatToSet(t *testing.T) {
	key := make([]byte, 32)
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { rdb.Close() })
	one := []Limit{PerSecond(10)}
	red := func(mod func(*RedisConfig)) func() error {
		return func() error {
			cfg := RedisConfig{Limits: one, BoundaryKey: key}
			mod(&cfg)
			_, err := NewRedis(rdb, cfg)
			return err
		}
	}
	local := func(cfg LocalConfig) func() error {
		return func() error { _, err := NewLocal(cfg); return err }
	}
	for _, tt := range []struct {
		name  string
		run   func() error
		words []string
	}{
		{"rate zero", local(LocalConfig{Limits: []Limit{{Period: time.Second}}}), []string{"Limit.Rate", "limiter.PerSecond(25)"}},
		{"period negative", local(LocalConfig{Limits: []Limit{{Rate: 1, Period: -time.Second}}}), []string{"Limit.Period", "time.Second"}},
		{"burst negative", local(LocalConfig{Limits: []Limit{{Rate: 1, Burst: -1}}}), []string{"Limit.Burst", "zero means 1"}},
		{"spread negative", local(LocalConfig{Limits: []Limit{{Rate: 1, Spread: -1}}}), []string{"Limit.Spread", "limiter.Margin"}},
		{"rate too fast", local(LocalConfig{Limits: []Limit{{Rate: 2_000_000, Period: time.Second}}}), []string{"Limit.Rate", "at most 1000000 per second"}},
		{"local owner share", local(LocalConfig{Limits: one, OwnerShare: 2}), []string{"LocalConfig.OwnerShare", "0.5"}},
		{"local max boundaries", local(LocalConfig{Limits: one, MaxBoundaries: -1}), []string{"LocalConfig.MaxBoundaries", "zero means 10000"}},
		{"redis owner share", red(func(c *RedisConfig) { c.OwnerShare = -1 }), []string{"RedisConfig.OwnerShare", "0.5"}},
		{"redis limit", red(func(c *RedisConfig) { c.Limits = []Limit{{}} }), []string{"RedisConfig.Limits[0]", "Limit.Rate", "limiter.PerSecond(25)"}},
		{"fallback share", red(func(c *RedisConfig) { c.FallbackShare = 3 }), []string{"RedisConfig.FallbackShare", "1/(number of processes)"}},
		{"on unavailable", red(func(c *RedisConfig) { c.OnUnavailable = 9 }), []string{"RedisConfig.OnUnavailable", "limiter.FailOpen", "limiter.FailClosed"}},
		{"timeout", red(func(c *RedisConfig) { c.Timeout = -1 }), []string{"RedisConfig.Timeout", "zero means 50ms"}},
		{"cooldown timeout", red(func(c *RedisConfig) { c.CooldownTimeout = -1 }), []string{"RedisConfig.CooldownTimeout", "zero means 500ms"}},
		{"probe interval", red(func(c *RedisConfig) { c.ProbeInterval = -1 }), []string{"RedisConfig.ProbeInterval", "zero means 1s"}},
		{"prefetch ttl", red(func(c *RedisConfig) { c.PrefetchTTL = -1 }), []string{"RedisConfig.PrefetchTTL", "zero means 100ms"}},
		{"max cooldown", red(func(c *RedisConfig) { c.MaxCooldown = -1 }), []string{"RedisConfig.MaxCooldown", "zero means 5m0s"}},
		{"prefetch", red(func(c *RedisConfig) { c.Prefetch = -1 }), []string{"RedisConfig.Prefetch", "zero means no prefetching"}},
		{"max batch", red(func(c *RedisConfig) { c.MaxBatch = -1 }), []string{"RedisConfig.MaxBatch", "zero means 256"}},
		{"queue with prefetch", red(func(c *RedisConfig) { c.Queue = &FairQueue{}; c.Prefetch = 4 }), []string{"RedisConfig.Queue", "RedisConfig.Prefetch", "set Prefetch to 0"}},
		{"queue max wait", red(func(c *RedisConfig) { c.Queue = &FairQueue{MaxWait: -1} }), []string{"FairQueue.MaxWait", "zero means 10s"}},
		{"queue lookahead", red(func(c *RedisConfig) { c.Queue = &FairQueue{Lookahead: -1} }), []string{"FairQueue.Lookahead", "zero means 50ms"}},
		{"queue weight", red(func(c *RedisConfig) { c.Queue = &FairQueue{Weights: map[string]int{"a": 0}} }), []string{`FairQueue.Weights["a"]`, "between 1 and"}},
		{"prefix", red(func(c *RedisConfig) { c.Prefix = "{x}" }), []string{"RedisConfig.Prefix", `"myapp:limiter:"`}},
		{"nil client", func() error { _, err := NewRedis(nil, RedisConfig{Limits: one, BoundaryKey: key}); return err }, []string{"Redis client", "redis.NewClient"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
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
