package ledger

import (
	"strconv"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/redistest"
)

// roundTrips counts the round trips a client makes.
type roundTrips = redistest.RoundTrips

// BenchmarkReserveComplete measures the cost of one action's bookkeeping:
// Reserve a new action, then Complete it with a small response. Memory and
// Redis run in the same benchmark so their numbers compare directly;
// roundtrips/op is counted by a go-redis hook.
func BenchmarkReserveComplete(b *testing.B) {
	run := func(b *testing.B, s Store, rt *roundTrips) {
		ctx := b.Context()
		out := Outcome{Status: 201, Body: []byte(`{"id":"ch_1","status":"succeeded"}`)}
		action := func(i int) {
			k := Key{Tenant: "acme", Operation: "charge", Key: strconv.Itoa(i)}
			res, err := s.Reserve(ctx, ReserveRequest{Key: k, Fingerprint: fpA, Owner: "bench", Retention: time.Minute})
			if err != nil || res.Verdict != VerdictCreated {
				b.Fatalf("Reserve: %s, %v", res.Verdict, err)
			}
			if err := s.Complete(ctx, k, res.Token, out); err != nil {
				b.Fatal(err)
			}
		}
		action(-1) // load the scripts before counting
		start := rt.N.Load()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			action(i)
			i++
		}
		b.ReportMetric(float64(rt.N.Load()-start)/float64(i), "roundtrips/op")
	}
	b.Run("memory", func(b *testing.B) {
		run(b, NewMemory(MemoryConfig{}), &roundTrips{})
	})
	b.Run("redis", func(b *testing.B) {
		client := redistest.Client(b)
		rt := &roundTrips{}
		client.AddHook(rt)
		// A minute's retention: the benchmark's records clean themselves up.
		run(b, mustRedis(b, client, RedisConfig{Prefix: redistest.Prefix(b)}), rt)
	})
}
