package limiterbench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/limiter"
)

// hotRate is high enough that every decision is allowed: the benchmark
// measures the cost of deciding, on one hot key.
const hotRate = 1_000_000

// queueTenants is how many owners the fair queue's callers take turns as:
// worker w asks for tenant w mod queueTenants.
const queueTenants = 4

// contender is one way of deciding: op makes one decision for worker w.
type contender struct {
	name string
	op   func(ctx context.Context, w int) error
}

// rig is one private Redis, a client to it with a pool for 64 callers
// that every contender shares (so the same pool and the same hook), and
// a second client, without the hook, that reads the server's load.
type rig struct {
	rdb   *redis.Client
	stats *redis.Client
	sent  *sentCommands
}

// newRig starts a private Redis, whatever REDIS_ADDR says: the load read
// from INFO must be the contenders' alone.
func newRig(tb testing.TB) *rig {
	srv := redistest.Start(tb)
	stats := srv.Client(tb)
	rdb := redis.NewClient(&redis.Options{
		Addr:                  srv.Addr,
		ContextTimeoutEnabled: true, // bounds every call; the limiter then needs no goroutine
		PoolSize:              64,
	})
	tb.Cleanup(func() { _ = rdb.Close() })
	sent := &sentCommands{}
	rdb.AddHook(sent)
	return &rig{rdb: rdb, stats: stats, sent: sent}
}

// contenders returns, on r's client: a bare PING (the floor of a round
// trip), redis_rate, and the limiter coalescing (its default), with
// MaxBatch 1 (one round trip per decision), prefetching 10 tokens per round
// trip, and with the fair queue (coalescing, queueTenants owners).
func (r *rig) contenders(tb testing.TB) []contender {
	prefix := redistest.Prefix(tb)
	rr := redis_rate.NewLimiter(r.rdb)
	rrLimit := redis_rate.PerSecond(hotRate)
	rrKey := prefix + "redis_rate:api.example.com#0123456789abcdef"
	newLim := func(name string, cfg limiter.RedisConfig) *limiter.Redis {
		cfg.Limits = []limiter.Limit{limiter.PerSecond(hotRate).WithBurst(hotRate)}
		cfg.BoundaryKey = redistest.BoundaryKey()
		cfg.Prefix = prefix + name + ":"
		cfg.Timeout = time.Second // measure deciding, not the fail-open path
		l, err := limiter.NewRedis(r.rdb, cfg)
		if err != nil {
			tb.Fatal(err)
		}
		return l
	}
	lim := newLim("plain", limiter.RedisConfig{})
	single := newLim("single", limiter.RedisConfig{MaxBatch: 1})
	prefetched := newLim("prefetch", limiter.RedisConfig{Prefetch: 10})
	queued := newLim("queue", limiter.RedisConfig{Queue: &limiter.FairQueue{}})
	req := limiter.Request{Boundary: "api.example.com#0123456789abcdef"}
	var tenants [queueTenants]limiter.Request
	for i := range tenants {
		tenants[i] = limiter.Request{Boundary: req.Boundary, Owner: fmt.Sprint("tenant", i)}
	}
	return []contender{
		{"ping", func(ctx context.Context, _ int) error { return r.rdb.Ping(ctx).Err() }},
		{"redis_rate", func(ctx context.Context, _ int) error {
			res, err := rr.Allow(ctx, rrKey, rrLimit)
			if err == nil && res.Allowed != 1 {
				err = fmt.Errorf("refused: %+v", res)
			}
			return err
		}},
		{"limiter", func(ctx context.Context, _ int) error { return mustAllow(lim.Allow(ctx, req)) }},
		{"limiter_single", func(ctx context.Context, _ int) error { return mustAllow(single.Allow(ctx, req)) }},
		{"limiter_prefetch10", func(ctx context.Context, _ int) error { return mustAllow(prefetched.Allow(ctx, req)) }},
		{"limiter_queue", func(ctx context.Context, w int) error {
			return mustAllow(queued.Allow(ctx, tenants[w%queueTenants]))
		}},
	}
}

// BenchmarkDecisions measures decisions per second at concurrency 1, 16
// and 64 against one private Redis for every contender, with Redis round
// trips, Redis µs (INFO commandstats) and Redis CPU µs (INFO cpu) per
// decision.
func BenchmarkDecisions(b *testing.B) {
	r := newRig(b)
	contenders := r.contenders(b)
	for _, c := range []int{1, 16, 64} {
		for _, ct := range contenders {
			b.Run(fmt.Sprintf("c=%d/%s", c, ct.name), func(b *testing.B) {
				// Warm up: load scripts and open connections outside the
				// measurement.
				for w := range c {
					if err := ct.op(context.Background(), w); err != nil {
						b.Fatal(err)
					}
				}
				var next atomic.Int64
				m := r.measure(b, c, func(ctx context.Context, w int) bool {
					if next.Add(1) > int64(b.N) {
						return false
					}
					if err := ct.op(ctx, w); err != nil {
						b.Error(err)
						return false
					}
					return true
				}, b.ResetTimer)
				b.StopTimer()
				b.ReportMetric(m.perSecond(), "decisions/s")
				b.ReportMetric(m.roundTrips(), "roundtrips/op")
				b.ReportMetric(m.redisMicros(), "redis-µs/op")
				b.ReportMetric(m.redisCPUMicros(), "redis-cpu-µs/op")
			})
		}
	}
}

func mustAllow(d limiter.Decision, err error) error {
	if err == nil && (!d.Allowed || d.Fallback) {
		err = fmt.Errorf("refused or decided without Redis: %+v", d)
	}
	return err
}

// run is what one measured run spent.
type run struct {
	decisions int64
	elapsed   time.Duration
	trips     int64                 // round trips the client sent
	cmds      redistest.CommandStat // the commands it sent, from commandstats
	cpu       time.Duration         // Redis's CPU time
}

func (m run) perSecond() float64  { return float64(m.decisions) / m.elapsed.Seconds() }
func (m run) roundTrips() float64 { return float64(m.trips) / float64(m.decisions) }

// redisMicros is the µs Redis spent running the commands the client sent
// (a script with the commands it runs), per decision.
func (m run) redisMicros() float64 { return float64(m.cmds.Usec) / float64(m.decisions) }

// redisCPUMicros is Redis's CPU time per decision: its commands plus
// reading requests, writing replies and its event loop.
func (m run) redisCPUMicros() float64 {
	return float64(m.cpu.Microseconds()) / float64(m.decisions)
}

// measure runs step on c goroutines (worker w = 0..c-1) until each step
// returns false, and returns what the run spent, reading the server's
// load before and after it. start, if not nil, is called just before the
// goroutines start.
func (r *rig) measure(tb testing.TB, c int, step func(ctx context.Context, w int) bool, start func()) run {
	ctx := context.Background()
	before, err := redistest.ReadLoad(ctx, r.stats)
	if err != nil {
		tb.Fatal(err)
	}
	r.sent.reset()
	var ops atomic.Int64
	var wg sync.WaitGroup
	if start != nil {
		start()
	}
	t0 := time.Now()
	for w := range c {
		wg.Go(func() {
			for step(ctx, w) {
				ops.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(t0)
	trips, names := r.sent.read()
	after, err := redistest.ReadLoad(ctx, r.stats)
	if err != nil {
		tb.Fatal(err)
	}
	return run{
		decisions: ops.Load(), elapsed: elapsed, trips: trips,
		cmds: after.Spent(before, names...), cpu: after.CPU - before.CPU,
	}
}

// sentCommands is a go-redis hook that counts a client's round trips
// (redistest.RoundTrips) and remembers the names of the commands sent, so
// that only those are read from INFO commandstats: a script's own
// commands are in the script's time already.
type sentCommands struct {
	redistest.RoundTrips
	names sync.Map // command name -> struct{}
}

func (s *sentCommands) reset() {
	s.N.Store(0)
	s.names.Clear()
}

func (s *sentCommands) read() (int64, []string) {
	var names []string
	s.names.Range(func(k, _ any) bool {
		names = append(names, k.(string))
		return true
	})
	return s.N.Load(), names
}

func (s *sentCommands) note(cmd redis.Cmder) {
	if _, ok := s.names.Load(cmd.Name()); !ok {
		s.names.Store(cmd.Name(), struct{}{})
	}
}

// ProcessHook implements redis.Hook.
func (s *sentCommands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	next = s.RoundTrips.ProcessHook(next)
	return func(ctx context.Context, cmd redis.Cmder) error {
		s.note(cmd)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook.
func (s *sentCommands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	next = s.RoundTrips.ProcessPipelineHook(next)
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			s.note(cmd)
		}
		return next(ctx, cmds)
	}
}
