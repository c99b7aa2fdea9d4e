package retrybudget

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/limiter"
)

// frozenLimiter returns a fail-closed Redis limiter with a decision Timeout
// far longer than the calls below, on a private Redis it has reached once
// (connected, scripts loaded) and that is now frozen: a round trip gets no
// answer, so only the call's own bound ends it.
func frozenLimiter(t *testing.T, queue *limiter.FairQueue, maxBatch int) *limiter.Redis {
	t.Helper()
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	lim, err := limiter.NewRedis(rdb, limiter.RedisConfig{
		Limits:        []limiter.Limit{limiter.PerSecond(1000)},
		BoundaryKey:   redistest.BoundaryKey(),
		Prefix:        redistest.Prefix(t),
		Timeout:       5 * time.Second,
		OnUnavailable: limiter.FailClosed,
		Queue:         queue,
		MaxBatch:      maxBatch,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := lim.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Freeze(t)
	return lim
}

// A limiter round trip cut by the call's own bound refused nothing: the
// call ends with the bound's reason (ErrDeadline for Config.Deadline,
// ErrWaitTooLong for MaxWait), never ErrRateLimited, which promises a
// RetryAt when the limiter expects room. Only the fair queue's own "the
// slot does not fit" refusal, a Decision with RetryAfter, is a rate limit.
func TestLimiterRoundTripCutByTheCallsBound(t *testing.T) {
	limiters := []struct {
		name     string
		queue    *limiter.FairQueue
		maxBatch int
	}{
		{name: "fair queue", queue: &limiter.FairQueue{}},
		{name: "unbatched", maxBatch: 1},
	}
	bounds := []struct {
		name string
		cfg  Config
		want error
	}{
		{name: "Config.Deadline", cfg: Config{Deadline: 300 * time.Millisecond}, want: ErrDeadline},
		{name: "MaxWait", cfg: Config{MaxWait: 300 * time.Millisecond}, want: ErrWaitTooLong},
	}
	for _, l := range limiters {
		for _, b := range bounds {
			t.Run(l.name+"/"+b.name, func(t *testing.T) {
				p := newProvider(t, status(200))
				cfg := b.cfg
				cfg.Limiter = frozenLimiter(t, l.queue, l.maxBatch)
				tr := New(cfg)
				start := time.Now()
				_, err := send(context.Background(), t, tr, "GET", p.URL, "")
				elapsed := time.Since(start)
				var e *Error
				if !errors.As(err, &e) || e.Reason != b.want || errors.Is(err, ErrRateLimited) {
					t.Fatalf("error %v; want %v, not ErrRateLimited", err, b.want)
				}
				if !errors.Is(err, context.DeadlineExceeded) || e.Attempts != 0 || !e.RetryAt.IsZero() {
					t.Fatalf("error %v: attempts %d, RetryAt %v; want the round trip's end as the cause, no attempt, no RetryAt",
						err, e.Attempts, e.RetryAt)
				}
				if n := len(p.requests()); n != 0 {
					t.Fatalf("%d arrivals without the limiter's admission; want 0", n)
				}
				// The README's bound for calls on Redis: the deadline plus
				// 250 ms.
				if elapsed > 300*time.Millisecond+250*time.Millisecond {
					t.Fatalf("the call took %v; want it ended by its 300ms bound", elapsed)
				}
			})
		}
	}
}
