package retrybudget_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger"
)

// simWorlds are the stores TestSimulation runs against. PostgreSQL lives in
// its own module (ledger/pgledger), which this package cannot import.
func simWorlds() []*simWorld {
	return []*simWorld{memoryWorld(), redisWorld()}
}

// memoryWorld is ledger.Memory in virtual time: a 30 s lease costs nothing.
func memoryWorld() *simWorld {
	return &simWorld{name: "Memory", lease: 30 * time.Second, slack: 100 * time.Millisecond,
		virtual: true, inbound: true, ci: 300, long: 20_000,
		open: func(*testing.T, *simRun) (ledger.Store, func(*simRun, bool)) {
			return ledger.NewMemory(ledger.MemoryConfig{}), nil
		}}
}

// simBubble runs body in a synctest bubble: time is virtual and advances
// when every goroutine of the bubble is blocked.
func simBubble(t *testing.T, body func(t *testing.T)) {
	synctest.Test(t, body)
}

// redisWorld is ledger.Redis on private redis-server processes, in real
// time with a 300 ms lease: one shared server for most schedules, and a
// primary with a replica of its own for a schedule with WaitReplicas.
func redisWorld() *simWorld {
	w := &simWorld{name: "Redis", lease: 300 * time.Millisecond, slack: 250 * time.Millisecond,
		replicas: true, ci: 32, long: 1000, parallel: 8}
	var shared *redistest.Server
	w.setup = func(t *testing.T) { shared = redistest.Start(t) }
	w.open = func(t *testing.T, r *simRun) (ledger.Store, func(*simRun, bool)) {
		cfg := ledger.RedisConfig{Config: ledger.Config{FingerprintKeys: ledger.FingerprintKeys{redistest.LedgerKey()}},
			Prefix: redistest.Prefix(t)}
		if !r.s.WaitReplicas {
			c := redis.NewClient(&redis.Options{Addr: shared.Addr, ContextTimeoutEnabled: true})
			t.Cleanup(func() { c.Close() })
			s, err := ledger.NewRedis(c, cfg)
			if err != nil {
				t.Fatal(err)
			}
			return s, nil
		}
		pair := startPair(t)
		cfg.WaitReplicas, cfg.WaitTimeout = 1, w.lease/4
		s, err := ledger.NewRedis(pair.client, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s, pair.lag
	}
	return w
}

// redisPair is a primary and its replica, and a client that follows the
// primary through a failover.
type redisPair struct {
	primary, replica *redistest.Server
	addr             atomic.Value // string: the current primary
	client           *redis.Client
	mu               sync.Mutex // guards lagging
	lagging          bool
}

func startPair(t *testing.T) *redisPair {
	p := &redisPair{primary: redistest.StartWith(t, "--repl-diskless-sync-delay", "0")}
	host, port, _ := net.SplitHostPort(p.primary.Addr)
	p.replica = redistest.StartWith(t, "--replicaof", host, port)
	p.addr.Store(p.primary.Addr)
	if !waitLink(p.replica.Addr) {
		t.Fatal("the replica's link never came up")
	}
	p.client = redis.NewClient(&redis.Options{ContextTimeoutEnabled: true,
		Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, p.addr.Load().(string))
		}})
	t.Cleanup(func() { p.client.Close() })
	return p
}

// lag stops the replica (SIGSTOP: it acknowledges nothing) for half a
// lease; then it resumes and catches up, or, with failover, the primary is
// SIGKILLed and the replica promoted, and every client follows it.
func (p *redisPair) lag(r *simRun, failover bool) {
	p.mu.Lock()
	if p.lagging {
		p.mu.Unlock()
		return
	}
	p.lagging = true
	p.mu.Unlock()
	pid := p.replica.Pid()
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	r.logf("replica: lagging")
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		time.Sleep(r.w.lease / 2)
		if failover {
			p.primary.Kill()
		}
		_ = syscall.Kill(pid, syscall.SIGCONT)
		if !failover {
			r.logf("replica: caught up")
			p.mu.Lock()
			p.lagging = false
			p.mu.Unlock()
			return
		}
		rc := redis.NewClient(&redis.Options{Addr: p.replica.Addr})
		defer rc.Close()
		if err := rc.ReplicaOf(context.Background(), "NO", "ONE").Err(); err != nil {
			r.logf("replica: promotion failed: %v", err)
			return
		}
		p.addr.Store(p.replica.Addr)
		r.logf("replica: promoted after the primary died")
		// A new replica joins the promoted primary, as Sentinel would
		// re-attach one, so WaitReplicas can be met again.
		host, port, _ := net.SplitHostPort(p.replica.Addr)
		next := redistest.StartWith(r.t, "--replicaof", host, port)
		waitLink(next.Addr)
		r.logf("replica: a new replica is in sync")
	}()
}

// waitLink waits until the replica at addr is in sync with its primary,
// and reports whether it got there within 10 s.
func waitLink(addr string) bool {
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		info, err := rc.Info(context.Background(), "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return true
		}
		time.Sleep(5 * time.Millisecond) // polling a separate process
	}
	return false
}
