package redistest

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestClientSetGet(t *testing.T) {
	tests := []struct {
		name string
		env  func(t *testing.T) string // the REDIS_ADDR to test with
	}{
		{"private server", func(*testing.T) string { return "" }},
		{"REDIS_ADDR host:port", func(t *testing.T) string { return Start(t).Addr }},
		{"REDIS_ADDR URL", func(t *testing.T) string { return "redis://" + Start(t).Addr + "/0" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(addrEnv, tt.env(t))
			c := Client(t)
			key := Prefix(t) + "k"
			if err := c.Set(t.Context(), key, "v", time.Minute).Err(); err != nil {
				t.Fatalf("SET: %v", err)
			}
			got, err := c.Get(t.Context(), key).Result()
			if err != nil || got != "v" {
				t.Fatalf("GET = %q, %v; want %q, nil", got, err, "v")
			}
		})
	}
}

func TestPrefixUnique(t *testing.T) {
	t.Parallel()
	want := fmt.Sprintf("rbtest:%d:", os.Getpid())
	seen := make(map[string]bool)
	for range 1000 {
		p := Prefix(t)
		if !strings.HasPrefix(p, want) || !strings.HasSuffix(p, ":") {
			t.Fatalf("Prefix = %q, want %q...:", p, want)
		}
		// A brace would make a hash tag and pin every key to one slot.
		if strings.ContainsAny(p, "{}") {
			t.Fatalf("Prefix = %q holds a hash tag brace", p)
		}
		if seen[p] {
			t.Fatalf("Prefix repeated %q", p)
		}
		seen[p] = true
	}
}

func TestServerDownAndRestart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		down func(*Server)
	}{
		{"Kill", (*Server).Kill},
		{"Stop", (*Server).Stop},
		{"still running", func(*Server) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := Start(t)
			addr, oldPid := s.Addr, s.Pid()
			c := s.Client(t)
			key := Prefix(t) + "k"
			if err := c.Set(t.Context(), key, "v", 0).Err(); err != nil {
				t.Fatalf("SET: %v", err)
			}

			tt.down(s)
			if tt.name != "still running" {
				if alive(oldPid) {
					t.Fatalf("pid %d still alive after %s", oldPid, tt.name)
				}
				if err := pingOK(addr); err == nil {
					t.Fatalf("PING answered after %s", tt.name)
				}
			}

			s.Restart()
			if s.Addr != addr {
				t.Fatalf("Addr after Restart = %s, want %s", s.Addr, addr)
			}
			if s.Pid() == oldPid || alive(oldPid) {
				t.Fatalf("Restart kept the old process %d", oldPid)
			}
			// The same client reconnects to the new process on the same port.
			if err := c.Ping(t.Context()).Err(); err != nil {
				t.Fatalf("PING after Restart: %v", err)
			}
			if err := c.Get(t.Context(), key).Err(); !errors.Is(err, redis.Nil) {
				t.Fatalf("GET after Restart: %v, want redis.Nil (no persistence)", err)
			}
		})
	}
}

func TestKillMakesClientPingFail(t *testing.T) {
	t.Parallel()
	s := Start(t)
	c := s.Client(t)
	if err := c.Ping(t.Context()).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	// The pooled connection dies with the server; the next PING must
	// notice, not be answered from anywhere else.
	s.Kill()
	s.Kill() // idempotent, as the cleanup calls it again
	// With default options go-redis retries the dial for about two seconds
	// before it reports the refusal.
	if err := c.Ping(t.Context()).Err(); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("PING after Kill: %v, want connection refused", err)
	}
}

func TestCleanupKillsProcesses(t *testing.T) {
	t.Parallel()
	var pids []int
	t.Run("owner", func(t *testing.T) {
		pids = append(pids, Start(t).Pid(), Start(t).Pid())
	})
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("redis-server pid %d outlived its test", pid)
		}
	}
}

func TestStartCluster(t *testing.T) {
	t.Parallel()
	var pids []int
	t.Run("cluster", func(t *testing.T) {
		start := time.Now()
		cl := StartCluster(t)
		t.Logf("cluster ready in %v", time.Since(start))
		for _, n := range cl.nodes {
			pids = append(pids, n.Pid())
		}
		if len(cl.Addrs) != 3 {
			t.Fatalf("Addrs = %v, want 3 nodes", cl.Addrs)
		}

		cc := cl.Client(t)
		ctx := t.Context()
		prefix := Prefix(t)
		slots := make(map[int64]bool)
		for i := range 200 {
			// Fixed-width suffixes: CRC16 is linear, and keys of varying
			// length collide on slots far more often than random ones.
			key := fmt.Sprintf("%s%04d", prefix, i)
			if err := cc.Set(ctx, key, i, time.Minute).Err(); err != nil {
				t.Fatalf("SET %s: %v", key, err)
			}
			slot, err := cc.ClusterKeySlot(ctx, key).Result()
			if err != nil {
				t.Fatalf("CLUSTER KEYSLOT: %v", err)
			}
			slots[slot] = true
		}
		if len(slots) < 150 {
			t.Errorf("200 keys fell in only %d slots", len(slots))
		}
		// Every master must hold some keys, or routing went to one node.
		for _, addr := range cl.Addrs {
			n := redis.NewClient(&redis.Options{Addr: addr})
			size, err := n.DBSize(ctx).Result()
			n.Close()
			if err != nil || size == 0 {
				t.Errorf("node %s DBSIZE = %d, %v; want keys on every master", addr, size, err)
			}
		}
		info, err := cc.ClusterInfo(ctx).Result()
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			t.Fatalf("CLUSTER INFO = %q, %v", info, err)
		}
	})
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("cluster node pid %d outlived its test", pid)
		}
	}
}

func TestNoRedisServer(t *testing.T) {
	entry := map[string]func(testing.TB){
		"Client":       func(t testing.TB) { Client(t) },
		"Start":        func(t testing.TB) { Start(t) },
		"StartCluster": func(t testing.TB) { StartCluster(t) },
	}
	for name, f := range entry {
		for _, require := range []string{"", "0", "1", "true"} {
			t.Run(name+"/"+RequireEnv+"="+require, func(t *testing.T) {
				t.Setenv("PATH", t.TempDir()) // nothing to find
				t.Setenv(addrEnv, "")
				t.Setenv(RequireEnv, require)
				r := run(f)
				wantFail := require == "1" || require == "true"
				switch {
				case wantFail && r.failed == "":
					t.Fatalf("skipped (%q), want failure", r.skipped)
				case !wantFail && r.skipped == "":
					t.Fatalf("failed (%q), want skip", r.failed)
				}
				if msg := r.failed + r.skipped; !strings.Contains(msg, "redistest: no Redis") {
					t.Fatalf("message %q does not say Redis is missing", msg)
				}
			})
		}
	}
}

// An unreachable REDIS_ADDR fails rather than skips, since someone asked for
// that server; and a password in it must not reach CI logs, even when the URL
// is malformed and url.Parse would quote it back.
func TestClientBadAddrFailsWithoutPassword(t *testing.T) {
	ports, err := freePorts(1, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(RequireEnv, "")
	for _, addr := range []string{
		"redis://user:s3cret@127.0.0.1:" + strconv.Itoa(ports[0]) + "/0", // nobody listens
		"redis://user:s3cret@127.0.0.1:port/0",                           // malformed
	} {
		t.Setenv(addrEnv, addr)
		r := run(func(t testing.TB) { Client(t) })
		if r.failed == "" {
			t.Fatalf("REDIS_ADDR=%s: skipped (%q), want failure", redact(addr), r.skipped)
		}
		if strings.Contains(r.failed, "s3cret") {
			t.Fatalf("failure message leaks the password: %s", r.failed)
		}
	}
}

// alive reports whether a process with pid exists. The servers are our
// children and reaped by exec.Cmd.Wait, so an exited one is gone entirely.
func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

// recorder is a testing.TB that records Skip and Fatal instead of acting on
// a real test. Methods it does not override panic through the nil TB.
type recorder struct {
	testing.TB
	skipped, failed string
	cleanups        []func()
}

func (r *recorder) Helper()                   {}
func (r *recorder) Logf(string, ...any)       {}
func (r *recorder) Cleanup(f func())          { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Skip(args ...any)          { r.skipped = fmt.Sprint(args...); runtime.Goexit() }
func (r *recorder) Fatal(args ...any)         { r.failed = fmt.Sprint(args...); runtime.Goexit() }
func (r *recorder) Fatalf(f string, a ...any) { r.failed = fmt.Sprintf(f, a...); runtime.Goexit() }

// run calls f with a recorder on its own goroutine, so that Skip and Fatal
// can end it with runtime.Goexit as the real ones do, then runs cleanups.
func run(f func(testing.TB)) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	return r
}

func TestReadLoadCountsScriptsOnce(t *testing.T) {
	c := Start(t).Client(t) // private: the counts are this test's alone
	before, err := ReadLoad(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	const runs = 50
	for range runs {
		if err := c.Eval(t.Context(), "redis.call('TIME'); return redis.call('PING')", nil).Err(); err != nil {
			t.Fatal(err)
		}
	}
	after, err := ReadLoad(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	if got := after.Spent(before, "eval"); got.Calls != runs || got.Usec <= 0 {
		t.Errorf("eval: %+v, want %d calls and some µs", got, runs)
	}
	// The script's own commands are counted under their names as well.
	if got := after.Spent(before, "time").Calls; got != runs {
		t.Errorf("time: %d calls, want %d", got, runs)
	}
	if after.CPU <= before.CPU {
		t.Errorf("CPU %v then %v, want it to grow", before.CPU, after.CPU)
	}
}
