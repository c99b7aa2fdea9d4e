package pgledger_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger/pgtest"
)

// BenchmarkReserveComplete measures one action's bookkeeping, Reserve of
// a new action then Complete with a small response, on the three stores
// in one run, so their ratios (to Redis) compare like with like. The
// PostgreSQL figure includes a durable commit per statement.
func BenchmarkReserveComplete(b *testing.B) {
	run := func(b *testing.B, s ledger.Store) {
		ctx := b.Context()
		out := ledger.Outcome{Status: 201, Body: []byte(`{"id":"ch_1","status":"succeeded"}`)}
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			k := ledger.Key{Tenant: "acme", Operation: "charge", Key: strconv.Itoa(i)}
			i++
			res, err := s.Reserve(ctx, ledger.ReserveRequest{Key: k, Fingerprint: "f", Owner: "bench", Retention: time.Minute})
			if err != nil || res.Verdict != ledger.VerdictCreated {
				b.Fatalf("Reserve: %s, %v", res.Verdict, err)
			}
			if err := s.Complete(ctx, k, res.Token, out); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("memory", func(b *testing.B) { run(b, ledger.NewMemory(ledger.MemoryConfig{})) })
	b.Run("redis", func(b *testing.B) {
		s, err := ledger.NewRedis(redistest.Client(b), ledger.RedisConfig{Prefix: redistest.Prefix(b)})
		if err != nil {
			b.Fatal(err)
		}
		run(b, s)
	})
	b.Run("postgres", func(b *testing.B) { run(b, newStore(b, pgtest.Pool(b), pgledger.Config{})) })
}
