package limiter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/internal/stallmeter"
)

// slowLink is a connection whose every write takes linkDelay, as over a
// link to a Redis far away.
type slowLink struct{ net.Conn }

// linkDelay is a write's delay on a slowLink: more than half of
// prepareTimeout, so that a first decision that must send its script
// (EVALSHA, then EVAL), let alone connect first (HELLO), cannot fit in it,
// while a decision whose script is loaded (EVALSHA) does.
const (
	linkDelay      = 160 * time.Millisecond
	prepareTimeout = 300 * time.Millisecond
)

func (c slowLink) Write(p []byte) (int, error) {
	time.Sleep(linkDelay)
	return c.Conn.Write(p)
}

// slowClient returns a client of srv whose connections are slowLinks.
func slowClient(t *testing.T, addr string, ctxTimeouts bool) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: ctxTimeouts,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return slowLink{c}, nil
		}})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// TestPrepareReadiesTheFirstDecision: over a link where a decision takes
// less than Timeout but connecting and loading the script do not, a
// fail-closed limiter's first decision fails without Prepare, and is
// granted after it, with or without the fair queue and whether or not the
// client honours context deadlines.
func TestPrepareReadiesTheFirstDecision(t *testing.T) {
	for _, queue := range []bool{false, true} {
		for _, ctxTimeouts := range []bool{false, true} {
			t.Run(fmt.Sprintf("queue=%v/ContextTimeoutEnabled=%v", queue, ctxTimeouts), func(t *testing.T) {
				srv := redistest.Start(t)
				cfg := RedisConfig{
					Limits:        []Limit{PerSecond(1000).WithBurst(10)},
					BoundaryKey:   redistest.BoundaryKey(),
					Timeout:       prepareTimeout,
					OnUnavailable: FailClosed,
				}
				if queue {
					cfg.Queue = &FairQueue{}
				}
				r := Request{Boundary: "b", Owner: "tenant"}

				cold := cfg
				cold.Prefix = redistest.Prefix(t)
				l, err := NewRedis(slowClient(t, srv.Addr, ctxTimeouts), cold)
				if err != nil {
					t.Fatal(err)
				}
				if d, err := l.Allow(context.Background(), r); !errors.Is(err, ErrUnavailable) {
					t.Fatalf("first decision without Prepare: %+v, %v; want ErrUnavailable (the link is too slow to connect within Timeout)", d, err)
				}

				ready := cfg
				ready.Prefix = redistest.Prefix(t)
				l, err = NewRedis(slowClient(t, srv.Addr, ctxTimeouts), ready)
				if err != nil {
					t.Fatal(err)
				}
				if err := l.Prepare(context.Background()); err != nil {
					t.Fatal(err)
				}
				stalls := stallmeter.Start()
				defer stalls.Close()
				start := time.Now()
				d, err := l.Allow(context.Background(), r)
				took := time.Since(start)
				if err != nil || !d.Allowed {
					t.Fatalf("first decision after Prepare: %+v, %v after %v (the machine stalled up to %v); want allowed in one round trip",
						d, err, took, stalls.Lateness())
				}
			})
		}
	}
}

// TestPrepareOnAHungRedis: Prepare on a Redis that does not answer returns
// an *UnavailableError when its context ends, whether or not the client
// honours context deadlines.
func TestPrepareOnAHungRedis(t *testing.T) {
	for _, ctxTimeouts := range []bool{false, true} {
		t.Run(fmt.Sprintf("ContextTimeoutEnabled=%v", ctxTimeouts), func(t *testing.T) {
			srv := redistest.Start(t)
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: ctxTimeouts})
			t.Cleanup(func() { _ = rdb.Close() })
			l, err := NewRedis(rdb, RedisConfig{Limits: []Limit{PerSecond(10)}, BoundaryKey: redistest.BoundaryKey(), Prefix: redistest.Prefix(t)})
			if err != nil {
				t.Fatal(err)
			}
			if err := rdb.Ping(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
			defer srv.Freeze(t)()
			stalls := stallmeter.Start()
			defer stalls.Close()
			const wait = 200 * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			start := time.Now()
			err = l.Prepare(ctx)
			took := time.Since(start)
			var ue *UnavailableError
			if !errors.As(err, &ue) || ue.Op != "prepare" || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Prepare on a hung Redis: %v; want an *UnavailableError for prepare wrapping DeadlineExceeded", err)
			}
			if late, ok := stalls.Excused(took, wait+faultSlack); !ok {
				t.Errorf("Prepare returned after %v (the machine stalled up to %v); its context ended after %v", took, late, wait)
			}
		})
	}
}
