package redistest

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// RoundTrips is a go-redis hook that counts the commands and pipelines a
// client sends: each is one network round trip (a NOSCRIPT fallback counts
// twice, as it costs). Add it with client.AddHook and read N.
type RoundTrips struct {
	// N is the number of round trips so far.
	N atomic.Int64
}

// DialHook implements redis.Hook; dials are not counted.
func (c *RoundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (c *RoundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.N.Add(1)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook.
func (c *RoundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.N.Add(1)
		return next(ctx, cmds)
	}
}
