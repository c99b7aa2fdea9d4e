package retrybudget_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/retrybudget/retrybudget/faultsim"
	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/limiter"
)

// redisWorld is ledger.Redis on private redis-server processes, in real
// time with a 300 ms lease: one shared server for most schedules, and a
// primary with a replica of its own for a schedule with WaitReplicas.
func redisWorld() *faultsim.World {
	w := &faultsim.World{Name: "Redis", Lease: 300 * time.Millisecond, Slack: 250 * time.Millisecond,
		Replicas: true, CI: 100, Long: 300, Parallel: 8}
	var shared *redistest.Server
	batches := &scriptBatches{}
	w.Setup = func(t *testing.T) {
		shared = redistest.Start(t)
		t.Cleanup(func() {
			t.Logf("%d ledger script runs went in %d shared round trips", batches.runs.Load(), batches.n.Load())
		})
	}
	w.Limiter = func(t *testing.T, r *faultsim.Run) limiter.Limiter { return redisLimiter(t, r, shared.Addr) }
	w.Batches = &faultsim.Batching{Cut: true, Resend: true, On: func(s *faultsim.Schedule) bool { return !s.WaitReplicas }}
	w.Open = func(t *testing.T, r *faultsim.Run) (ledger.Store, func(*faultsim.Run, bool)) {
		cfg := ledger.RedisConfig{Config: ledger.Config{FingerprintKeys: ledger.FingerprintKeys{redistest.LedgerKey()}},
			Prefix: redistest.Prefix(t)}
		if !r.Schedule().WaitReplicas {
			// The store's link adds the schedule's latency, so that the
			// calls of concurrent actions share round trips.
			link := &simLink{r: r, latency: r.Schedule().StoreLatency}
			c := redis.NewClient(&redis.Options{Addr: shared.Addr, ContextTimeoutEnabled: true, MaintNotificationsConfig: noMaint(),
				Dialer: link.dial})
			c.AddHook(batches)
			c.AddHook(strikes{r: r})
			t.Cleanup(func() { c.Close() })
			s, err := ledger.NewRedis(c, cfg)
			if err != nil {
				t.Fatal(err)
			}
			cfg.MaxBatch = 1
			unbatched, err := ledger.NewRedis(c, cfg)
			if err != nil {
				t.Fatal(err)
			}
			r.SetUnbatched(unbatched)
			return s, nil
		}
		pair := startPair(t)
		cfg.WaitReplicas, cfg.WaitTimeout = 1, w.Lease/4
		s, err := ledger.NewRedis(pair.client, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s, pair.lag
	}
	return w
}

// scriptBatches is a go-redis hook counting the pipelines of two or more
// script runs the ledger sends (its shared round trips: concurrent calls
// of one store, see ledger.RedisConfig.MaxBatch) and the runs they carry.
type scriptBatches struct{ n, runs atomic.Int64 }

func (*scriptBatches) DialHook(next redis.DialHook) redis.DialHook { return next }

func (*scriptBatches) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (b *scriptBatches) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if name := cmds[0].Name(); len(cmds) > 1 && (name == "evalsha" || name == "eval") {
			b.n.Add(1)
			b.runs.Add(int64(len(cmds)))
		}
		return next(ctx, cmds)
	}
}

// strikes is a go-redis hook that shows each pipeline of two or more
// script runs (a batch of the ledger's concurrent calls) to the simulator,
// and strikes it as told: the whole pipeline runs and every reply is lost,
// or only its first half reaches the server before the connection breaks
// (either way every command of it fails as with a cut connection); or the
// whole pipeline runs, its reply is lost, and it is sent again, as
// go-redis's own retry sends a pipeline whose connection broke.
type strikes struct{ r *faultsim.Run }

// errBatchCut is what a struck pipeline's commands fail with: the
// connection was reset under them.
var errBatchCut = &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}

func (strikes) DialHook(next redis.DialHook) redis.DialHook { return next }

func (strikes) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h strikes) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if name := cmds[0].Name(); len(cmds) < 2 || name != "evalsha" && name != "eval" {
			return next(ctx, cmds)
		}
		calls := make([]faultsim.BatchCall, len(cmds))
		for i, cmd := range cmds {
			calls[i] = scriptCall(cmd.Args())
		}
		sent := cmds
		switch h.r.StrikeBatch(calls) {
		case faultsim.StrikeNone:
			return next(ctx, cmds)
		case faultsim.StrikeCut:
			sent = cmds[:len(cmds)/2]
		case faultsim.StrikeResent:
			err := next(ctx, cmds)
			var wrote []faultsim.BatchCall
			for i, cmd := range cmds {
				if calls[i].Token != 0 && scriptWrote(cmd) {
					wrote = append(wrote, calls[i])
				}
				cmd.SetErr(nil)
			}
			h.r.Landed(wrote)
			h.r.Logf("store: a pipeline of %d script runs ran (%v), its reply was lost, and the client sends it again", len(cmds), err)
			return next(ctx, cmds)
		}
		err := next(ctx, sent)
		h.r.Logf("store: a pipeline of %d script runs was cut after %d ran (%v); every reply is lost", len(cmds), len(sent), err)
		for _, cmd := range cmds {
			cmd.SetErr(errBatchCut)
		}
		return errBatchCut
	}
}

// scriptWrote reports whether a fenced script's run wrote: it answered,
// and not 0 (the scripts' "not the owner").
func scriptWrote(cmd redis.Cmder) bool {
	c, ok := cmd.(*redis.Cmd)
	if !ok || c.Err() != nil {
		return false
	}
	n, isInt := c.Val().(int64)
	return !isInt || n != 0
}

// scriptCall reads the record and fencing token of one EVALSHA or EVAL
// of the ledger: ["evalsha", sha, 1, "<prefix>{<ID>}", token, ...]; a
// Reserve's first argument is no token, and matches no fenced write.
func scriptCall(args []any) faultsim.BatchCall {
	var c faultsim.BatchCall
	if len(args) < 5 {
		return c
	}
	key, _ := args[3].(string)
	if i, j := strings.LastIndexByte(key, '{'), strings.LastIndexByte(key, '}'); i >= 0 && j > i {
		c.ID = key[i+1 : j]
	}
	c.Token, _ = strconv.ParseInt(fmt.Sprint(args[4]), 10, 64)
	return c
}

// redisPair is a primary and its replica, and a client that follows the
// primary through a failover.
type redisPair struct {
	primary, replica *redistest.Server
	addr             atomic.Value // string: the current primary
	client           *redis.Client
	mu               sync.Mutex // guards primary, replica and link after start, and lagging
	lagging          bool
	// link relays the primary's replication stream to the replica.
	link *replLink
}

func startPair(t *testing.T) *redisPair {
	p := &redisPair{primary: redistest.StartWith(t, "--repl-diskless-sync-delay", "0")}
	p.link = startReplLink(t, p.primary.Addr)
	host, port, _ := net.SplitHostPort(p.link.Addr())
	p.replica = redistest.StartWith(t, "--replicaof", host, port, "--repl-diskless-sync-delay", "0")
	p.addr.Store(p.primary.Addr)
	if !waitLink(p.replica.Addr) {
		t.Fatal("the replica's link never came up")
	}
	p.client = redis.NewClient(&redis.Options{ContextTimeoutEnabled: true, MaintNotificationsConfig: noMaint(),
		Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, p.addr.Load().(string))
		}})
	t.Cleanup(func() { p.client.Close() })
	return p
}

// lag holds the replication stream (the replica receives and acknowledges
// nothing) for half a lease; then it flows again and the replica catches
// up, or, with failover, the link is cut (the held writes are lost), the
// primary SIGKILLed and the replica promoted, and every client follows it.
func (p *redisPair) lag(r *faultsim.Run, failover bool) {
	p.mu.Lock()
	if p.lagging {
		p.mu.Unlock()
		return
	}
	p.lagging = true
	primary, replica, link := p.primary, p.replica, p.link
	p.mu.Unlock()
	link.hold()
	r.Logf("replica: lagging")
	r.Go(func() {
		time.Sleep(r.World().Lease / 2)
		if failover {
			link.cut() // what the replica had not received is lost with the primary
			primary.Kill()
		} else {
			link.release()
		}
		if !failover {
			r.Logf("replica: caught up")
			p.mu.Lock()
			p.lagging = false
			p.mu.Unlock()
			return
		}
		rc := redis.NewClient(&redis.Options{Addr: replica.Addr})
		defer rc.Close()
		if err := rc.ReplicaOf(context.Background(), "NO", "ONE").Err(); err != nil {
			r.Logf("replica: promotion failed: %v", err)
			return
		}
		p.addr.Store(replica.Addr)
		r.Logf("replica: promoted after the primary died")
		// A new replica joins the promoted primary, as Sentinel would
		// re-attach one, so WaitReplicas can be met again.
		nextLink := startReplLink(r.T(), replica.Addr)
		host, port, _ := net.SplitHostPort(nextLink.Addr())
		next := redistest.StartWith(r.T(), "--replicaof", host, port, "--repl-diskless-sync-delay", "0")
		waitLink(next.Addr)
		p.mu.Lock()
		p.primary, p.replica, p.link, p.lagging = replica, next, nextLink, false
		p.mu.Unlock()
		r.Logf("replica: a new replica is in sync")
	})
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

// noMaint turns go-redis's maintenance notifications off. Left in its auto
// mode, a server that refuses the handshake makes go-redis (v9.23) write
// the client's shared options from each new connection under that
// connection's own lock: with ledger.Redis's WaitReplicas, which takes a
// Conn per write, -race reports it inside go-redis. The simulation is
// after the library's faults, not that one.
func noMaint() *maintnotifications.Config {
	return &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
}

// redisLimiter is the Redis world's limiter for a schedule with a rate
// limit: limiter.Redis, fail-closed, with a fair queue when the schedule
// draws one, over a link to the shared server that adds the schedule's
// latency and stalls (answers nothing) during its limiter outage.
func redisLimiter(t *testing.T, r *faultsim.Run, addr string) limiter.Limiter {
	s := r.Schedule()
	link := &simLink{r: r, latency: s.LimiterLatency, outage: true}
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaintNotificationsConfig: noMaint(),
		Dialer: link.dial})
	t.Cleanup(func() { c.Close() })
	cfg := limiter.RedisConfig{Limits: []limiter.Limit{limiter.PerSecond(s.Limit)}, BoundaryKey: redistest.BoundaryKey(),
		Prefix: redistest.Prefix(t), OnUnavailable: limiter.FailClosed, Timeout: r.World().LimiterTimeout()}
	if s.FairQueue {
		cfg.Queue = &limiter.FairQueue{}
	}
	lim, err := limiter.NewRedis(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

// simLink is the network between the processes and a Redis server.
type simLink struct {
	r *faultsim.Run
	// latency delays each write.
	latency time.Duration
	// outage: the link stalls during the schedule's limiter outage.
	outage bool
}

// dial connects to addr over the link.
func (l *simLink) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &simConn{Conn: conn, link: l}, nil
}

// stalledUntil returns the end of the outage when now is inside it.
func (l *simLink) stalledUntil(now time.Time) (time.Time, bool) {
	if !l.outage {
		return time.Time{}, false
	}
	s := l.r.Schedule()
	from := l.r.Start().Add(s.OutageFrom)
	until := from.Add(s.OutageLen)
	return until, s.OutageLen > 0 && !now.Before(from) && now.Before(until)
}

// simConn delays each write by the link's latency (up to the write
// deadline), and answers nothing while the link stalls (until the read
// deadline, as a hung Redis).
type simConn struct {
	net.Conn
	link *simLink
	mu   sync.Mutex // guards readDeadline and writeDeadline
	// readDeadline and writeDeadline are the deadlines go-redis set.
	readDeadline, writeDeadline time.Time
}

func (c *simConn) Write(p []byte) (int, error) {
	if d := c.link.latency; d > 0 {
		c.mu.Lock()
		dl := c.writeDeadline
		c.mu.Unlock()
		if !dl.IsZero() && time.Until(dl) < d {
			time.Sleep(time.Until(dl))
			return 0, os.ErrDeadlineExceeded
		}
		time.Sleep(d) // the request travels
	}
	return c.Conn.Write(p)
}

func (c *simConn) Read(p []byte) (int, error) {
	if until, stalled := c.link.stalledUntil(time.Now()); stalled {
		c.mu.Lock()
		dl := c.readDeadline
		c.mu.Unlock()
		if !dl.IsZero() && dl.Before(until) {
			time.Sleep(time.Until(dl))
			return 0, os.ErrDeadlineExceeded
		}
		time.Sleep(time.Until(until))
	}
	return c.Conn.Read(p)
}

func (c *simConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.readDeadline = t
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

func (c *simConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.writeDeadline = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

func (c *simConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.readDeadline, c.writeDeadline = t, t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}
