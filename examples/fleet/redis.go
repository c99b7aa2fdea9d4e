package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// noRedis is the message when no Redis can be had; it names every way out.
const noRedis = "no Redis: pass -redis host:port, set REDIS_ADDR, or install redis-server " +
	"(apt-get install redis-server, brew install redis) so that a private one is started"

// redisOptions reads a -redis value: a redis:// or rediss:// URL (for a
// password, a database number or TLS) or host:port.
func redisOptions(addr string) (*redis.Options, error) {
	if !strings.Contains(addr, "://") {
		return &redis.Options{Addr: addr}, nil
	}
	o, err := redis.ParseURL(addr)
	if err != nil {
		// url.Error repeats the URL, and the URL may hold a password.
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return nil, fmt.Errorf("-redis: %w", err)
	}
	return o, nil
}

// redisName returns addr fit for a log line: a URL loses its password.
func redisName(addr string) string {
	if !strings.Contains(addr, "://") {
		return addr
	}
	u, err := url.Parse(addr)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// pingRedis checks that the Redis at addr answers, with a message that
// says which Redis did not.
func pingRedis(ctx context.Context, addr string) error {
	o, err := redisOptions(addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	// A plain dial first: go-redis logs every failed dial of its pool.
	network := cmp.Or(o.Network, "tcp")
	c, err := (&net.Dialer{}).DialContext(ctx, network, o.Addr)
	if err != nil {
		return fmt.Errorf("the Redis at %s does not answer: %w", redisName(addr), err)
	}
	c.Close()
	rdb := redis.NewClient(o)
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("the Redis at %s does not answer PING: %w", redisName(addr), err)
	}
	return nil
}

// privateRedis is a redis-server started for one run, without persistence,
// in a temporary directory.
type privateRedis struct {
	addr   string
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd.Wait has returned
	dir    string
	output bytes.Buffer // the server's log; read only after exited closes
}

// startRedis starts redis-server from PATH on a free loopback port and
// waits until it answers PING. It fails with noRedis when there is no
// redis-server.
func startRedis(ctx context.Context) (*privateRedis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New(noRedis)
	}
	// A port found free may be taken before redis-server binds it; a few
	// tries on fresh ports make that race harmless.
	for range 3 {
		r, err := launchRedis(ctx, bin)
		if err == nil || !errors.Is(err, errRedisExited) {
			return r, err
		}
	}
	return nil, errors.New("redis-server exited at start three times")
}

// errRedisExited reports a redis-server that exited before answering.
var errRedisExited = errors.New("redis-server exited at start")

// launchRedis starts one redis-server on a port that was free a moment
// ago.
func launchRedis(ctx context.Context, bin string) (*privateRedis, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "fleet-redis-")
	if err != nil {
		return nil, err
	}
	r := &privateRedis{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, exited: make(chan struct{})}
	r.cmd = exec.Command(bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no", "--logfile", "")
	r.cmd.Stdout, r.cmd.Stderr = &r.output, &r.output
	if err := r.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	go func() {
		_ = r.cmd.Wait() // a killed server's exit status says nothing
		close(r.exited)
	}()

	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for pingRedis(ctx, r.addr) != nil {
		select {
		case <-r.exited:
			os.RemoveAll(dir)
			return nil, fmt.Errorf("%w: %s", errRedisExited, bytes.TrimSpace(r.output.Bytes()))
		case <-ctx.Done():
			r.stop()
			return nil, fmt.Errorf("redis-server on %s did not answer PING: %w", r.addr, ctx.Err())
		case <-tick.C:
		}
	}
	return r, nil
}

// stop kills the server, waits for it and removes its directory. Without
// persistence there is nothing to flush, so SIGKILL loses nothing.
func (r *privateRedis) stop() {
	_ = r.cmd.Process.Kill()
	<-r.exited
	os.RemoveAll(r.dir)
}

// freePort returns a loopback TCP port that was free when asked.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
