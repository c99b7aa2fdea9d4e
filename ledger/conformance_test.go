package ledger_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrybudget/retrybudget/internal/fakeclock"
	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/ledgertest"
)

func newMemoryHarness(t *testing.T) ledgertest.Harness {
	clock := fakeclock.New(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	short := time.Minute
	return ledgertest.Harness{
		Store:   ledger.NewMemory(ledger.MemoryConfig{Now: clock.Now, Config: ledger.Config{FingerprintKeys: ledgertest.FingerprintKeys()}}),
		Advance: func(_ *testing.T, d time.Duration) { clock.Advance(d) },
		// Past the expiry: at the expiry itself a record is still there,
		// as a Redis key is until its time has passed.
		WaitGone: func(*testing.T, ledger.Key) { clock.Advance(short + time.Millisecond) },
		Short:    short,
	}
}

func TestMemoryConformance(t *testing.T) {
	ledgertest.Run(t, newMemoryHarness)
}

// redisShort is the lease and retention the Redis suite waits out: long
// enough that a case's few round trips fit in it even on a stalled, loaded
// machine, short enough to keep the suite quick.
const redisShort = 400 * time.Millisecond

func newRedisHarness(client redis.UniversalClient) func(t *testing.T) ledgertest.Harness {
	return func(t *testing.T) ledgertest.Harness {
		s, err := ledger.NewRedis(client, ledger.RedisConfig{Prefix: redistest.Prefix(t), Config: ledger.Config{FingerprintKeys: ledgertest.FingerprintKeys()}})
		if err != nil {
			t.Fatal(err)
		}
		return ledgertest.Harness{
			Store: s,
			Advance: func(t *testing.T, d time.Duration) {
				ledgertest.WaitClock(t, "redis TIME", d, func() (time.Time, error) { return client.Time(t.Context()).Result() })
			},
			WaitGone: ledgertest.WaitGoneByGet(s),
			Short:    redisShort,
		}
	}
}

func TestRedisConformance(t *testing.T) {
	ledgertest.Run(t, newRedisHarness(redistest.Client(t)))
}

func TestRedisClusterConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-master cluster")
	}
	c := redistest.StartCluster(t)
	client := c.Client(t)
	ledgertest.Run(t, newRedisHarness(client))
	t.Run("SweepEveryMaster", func(t *testing.T) { testSweepEveryMaster(t, client) })
	t.Run("HeldIndex", func(t *testing.T) { testHeldIndex(t, client) })
}

// testSweepEveryMaster pins that Sweep scans every master, not just the
// one a client happens to talk to: the stuck records sit on several.
func testSweepEveryMaster(t *testing.T, client *redis.ClusterClient) {
	h := newRedisHarness(client)(t)
	const n = 30
	for i := range n {
		if _, err := h.Reserve(t.Context(), ledger.ReserveRequest{Key: ledger.Key{Operation: "spread", Key: strconv.Itoa(i)}, Fingerprint: "fp", Lease: h.Short}); err != nil {
			t.Fatal(err)
		}
	}
	h.Advance(t, h.Short)
	stuck, err := h.Sweep(t.Context(), 0)
	if err != nil || len(stuck) != n {
		t.Fatalf("Sweep found %d of %d, %v", len(stuck), n, err)
	}
	shards, err := client.ClusterShards(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	masters := map[int]bool{} // shard index
	for _, r := range stuck {
		slot, err := client.ClusterKeySlot(t.Context(), ledger.RedisKeyName(h.Store.(*ledger.Redis), r.Key)).Result()
		if err != nil {
			t.Fatal(err)
		}
		for i, sh := range shards {
			for _, sl := range sh.Slots {
				if slot >= sl.Start && slot <= sl.End {
					masters[i] = true
				}
			}
		}
	}
	if len(masters) < 2 {
		t.Fatalf("the %d records sit on %d master(s); the test proves nothing", n, len(masters))
	}
}
