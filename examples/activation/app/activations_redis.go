package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisTimeout bounds each call of RedisActivations.
const redisTimeout = 2 * time.Second

// RedisActivations keeps activations in Redis, as JSON strings under
// Prefix, shared by every instance on the same Redis. Like the ledger's
// records, an activation is as durable as the Redis configuration makes it.
type RedisActivations struct {
	client redis.UniversalClient
	prefix string
}

// NewRedisActivations returns activations stored in client under keys
// starting with prefix.
func NewRedisActivations(client redis.UniversalClient, prefix string) *RedisActivations {
	return &RedisActivations{client: client, prefix: prefix}
}

// key names the tenant's activation id. The tenant is hashed so that the
// key has a fixed shape whatever the tenant holds.
func (s *RedisActivations) key(tenant, id string) string {
	sum := sha256.Sum256([]byte(tenant))
	return s.prefix + hex.EncodeToString(sum[:8]) + ":" + id
}

// Put implements Activations.
func (s *RedisActivations) Put(ctx context.Context, tenant string, a Activation) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	if err := s.client.Set(ctx, s.key(tenant, a.ID), b, 0).Err(); err != nil {
		return fmt.Errorf("activation: redis put: %w", err)
	}
	return nil
}

// Get implements Activations.
func (s *RedisActivations) Get(ctx context.Context, tenant, id string) (Activation, error) {
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	b, err := s.client.Get(ctx, s.key(tenant, id)).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		return Activation{}, ErrNotFound
	case err != nil:
		return Activation{}, fmt.Errorf("activation: redis get: %w", err)
	}
	var a Activation
	if err := json.Unmarshal(b, &a); err != nil {
		return Activation{}, fmt.Errorf("activation: redis get: %w", err)
	}
	return a, nil
}
