package retrybudget

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/ledgertest"
)

// commandCount is a go-redis hook that counts the commands sent, each its
// own round trip (no pipelines here).
type commandCount struct{ n atomic.Int64 }

func (*commandCount) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commandCount) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (*commandCount) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestRedisStoreRoundTripsPerAction counts, at the driver, the Redis round
// trips of one successful keyed POST under an Action through the
// Transport, scripts already loaded: 2 where keys are honoured, 3 where
// they are not.
func TestRedisStoreRoundTripsPerAction(t *testing.T) {
	client := redistest.Client(t)
	hook := &commandCount{}
	client.AddHook(hook)
	for _, tc := range []struct {
		name     string
		honoured bool
		want     int64
	}{{"key honoured", true, 2}, {"key not honoured", false, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			store, err := ledger.NewRedis(client, ledger.RedisConfig{Prefix: redistest.Prefix(t),
				Config: ledger.Config{FingerprintKeys: ledgertest.FingerprintKeys()}})
			if err != nil {
				t.Fatal(err)
			}
			tr := New(Config{Base: canned{}, KeysHonoured: tc.honoured, Ledger: LedgerConfig{Store: store}})
			postCharge(t, tr, "warm-up") // loads the scripts (a NOSCRIPT, then EVAL)
			before := hook.n.Load()
			postCharge(t, tr, "order-1")
			if got := hook.n.Load() - before; got != tc.want {
				t.Fatalf("%d Redis round trips for the action; want %d", got, tc.want)
			}
		})
	}
}
