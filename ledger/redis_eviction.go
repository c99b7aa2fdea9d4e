package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/internal/redisstore"
)

// ErrEviction reports a Redis that may evict ledger records: its
// maxmemory-policy is not noeviction, or it would not say (CONFIG GET
// refused). It wraps ErrInvalidConfig. Set RedisConfig.AllowEviction to
// run anyway.
var ErrEviction = fmt.Errorf("%w: Redis may evict ledger records", ErrInvalidConfig)

// evictionCheckTimeout bounds NewRedis's read of maxmemory-policy.
const evictionCheckTimeout = 5 * time.Second

// checkNoEviction returns nil when every primary behind client has
// maxmemory-policy noeviction. Every record carries a TTL (its retention),
// so under a volatile-* policy, as under allkeys-*, memory pressure can
// drop any record, a completed one included, and the action then runs
// again. It fails with ErrEviction for another policy or a refused CONFIG
// GET (managed services often disable it), and with the client's error
// when Redis does not answer.
func checkNoEviction(client redis.UniversalClient) error {
	ctx, cancel := context.WithTimeout(context.Background(), evictionCheckTimeout)
	defer cancel()
	check := func(ctx context.Context, c redis.Cmdable) error {
		m, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
		var refused redis.Error
		switch {
		case errors.As(err, &refused):
			return fmt.Errorf("%w: CONFIG GET maxmemory-policy refused (%v), so NewRedis cannot tell whether records may be evicted; "+
				"set RedisConfig.AllowEviction once you know the policy is noeviction or accept evictions", ErrEviction, err)
		case err != nil:
			return fmt.Errorf("ledger: NewRedis: reading maxmemory-policy: %w", err)
		}
		p, ok := m["maxmemory-policy"]
		switch {
		case !ok:
			return fmt.Errorf("%w: CONFIG GET maxmemory-policy returned nothing; set RedisConfig.AllowEviction to run without the check", ErrEviction)
		case p != "noeviction":
			return fmt.Errorf("%w: maxmemory-policy is %s, under which memory pressure can drop a record and run its action again; "+
				"set it to noeviction, or set RedisConfig.AllowEviction to accept that", ErrEviction, p)
		}
		return nil
	}
	run := func(ctx context.Context) (struct{}, error) {
		switch c := client.(type) {
		case *redis.ClusterClient:
			return struct{}{}, c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return check(ctx, n) })
		case *redis.Ring:
			return struct{}{}, c.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error { return check(ctx, n) })
		}
		return struct{}{}, check(ctx, client)
	}
	if redisstore.HonoursContext(client) {
		_, err := run(ctx)
		return err
	}
	_, err := redisstore.Detach(ctx, run)
	return err
}
