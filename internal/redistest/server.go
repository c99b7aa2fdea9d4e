package redistest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// stopGrace is how long Stop waits after SIGTERM before it resorts to
// SIGKILL. Without persistence redis-server exits at once; the bound only
// keeps a wedged server from hanging the test.
const stopGrace = 10 * time.Second

// maxStartAttempts bounds retries when a freshly chosen port is taken
// before redis-server binds it.
const maxStartAttempts = 5

// Server is a private redis-server process owned by one test, for fault
// tests that stop, kill and restart Redis. Its methods are safe for
// concurrent use.
type Server struct {
	mu   sync.Mutex // guards proc and serialises Kill, Stop and Restart
	proc *process   // the latest process started; nil only during Start

	// Addr is the server's "127.0.0.1:port". It stays the same across
	// Restart, so clients made before a restart reconnect to the new process.
	Addr string

	t       testing.TB
	bin     string // path of redis-server
	dir     string // --dir; in a cluster shared by all nodes
	port    int
	cluster bool     // start with cluster mode enabled
	extra   []string // more arguments, after the defaults (see StartWith)
}

// process is one run of redis-server.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd.Wait has returned
	output bytes.Buffer  // stdout and stderr; read only after exited closes
}

// Start starts a private redis-server on a free loopback port, without
// persistence (--save "" --appendonly no) and with its working directory
// under t.TempDir, waits until it answers PING, and registers t.Cleanup to
// kill it. REDIS_ADDR is ignored: a fault test must own the process it
// kills.
//
// Without redis-server on PATH the test is skipped, or failed when
// [RequireEnv] is set. Any other failure to start fails the test.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := lookBinary(t, "redis-server", noRedis)
	s, err := startServer(t, bin, t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// startServer starts a redis-server in dir on a fresh free port, retrying
// on new ports when the server exits before it is ready, and registers its
// kill with t.Cleanup.
func startServer(t testing.TB, bin, dir string, cluster bool) (*Server, error) {
	t.Helper()
	return startServerWith(t, bin, dir, nil, cluster)
}

// startServerWith is startServer with extra arguments.
func startServerWith(t testing.TB, bin, dir string, extra []string, cluster bool) (*Server, error) {
	t.Helper()
	var lastErr error
	for range maxStartAttempts {
		ports, err := freePorts(1, cluster)
		if err != nil {
			return nil, err
		}
		s := &Server{
			Addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])),
			t:       t,
			bin:     bin,
			dir:     dir,
			port:    ports[0],
			cluster: cluster,
			extra:   extra,
		}
		s.mu.Lock()
		lastErr = s.launchLocked()
		s.mu.Unlock()
		if lastErr == nil {
			t.Cleanup(s.Kill)
			return s, nil
		}
		if !errors.Is(lastErr, errExited) {
			return nil, lastErr
		}
	}
	return nil, lastErr
}

// args returns the redis-server command line for s.
func (s *Server) args() []string {
	a := []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no", // the process must stay our child to be killed and reaped
		"--logfile", "", // log to stdout, which launchLocked captures for errors
	}
	a = append(a, s.extra...)
	if s.cluster {
		a = append(a,
			"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(s.dir, "nodes-"+strconv.Itoa(s.port)+".conf"),
		)
	}
	return a
}

// launchLocked starts a new process for s and waits until it answers PING.
// On failure the process is killed and reaped, and the error carries its
// output. launchLocked requires that s.mu is held.
func (s *Server) launchLocked() error {
	p := &process{exited: make(chan struct{})}
	p.cmd = exec.Command(s.bin, s.args()...)
	p.cmd.Dir = s.dir
	p.cmd.Stdout = &p.output
	p.cmd.Stderr = &p.output
	p.cmd.SysProcAttr = sysProcAttr()
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("redistest: start redis-server: %w", err)
	}
	go func() {
		_ = p.cmd.Wait() // the exit status of a killed server says nothing useful
		close(p.exited)
	}()
	s.proc = p
	if err := waitFor(p.exited, func() error { return pingOK(s.Addr) }); err != nil {
		s.signalLocked(syscall.SIGKILL, 0)
		return fmt.Errorf("redistest: redis-server on %s: %w\n%s", s.Addr, err, p.output.Bytes())
	}
	return nil
}

// signalLocked sends sig to the current process and waits for it to exit,
// escalating to SIGKILL after grace when grace is positive. It returns at
// once when no process is running. signalLocked requires that s.mu is held.
func (s *Server) signalLocked(sig syscall.Signal, grace time.Duration) {
	p := s.proc
	if p == nil {
		return
	}
	select {
	case <-p.exited:
		return
	default:
	}
	// An error means the process has already exited; exited will close.
	_ = p.cmd.Process.Signal(sig)
	if grace > 0 {
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-p.exited:
			return
		case <-timer.C:
			_ = p.cmd.Process.Kill()
		}
	}
	<-p.exited
}

// exitedChan returns the channel closed when the current process exits.
func (s *Server) exitedChan() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc.exited
}

// Client returns a client for s, closed at t.Cleanup. It keeps pointing at
// s.Addr across Kill and Restart, so a test can watch commands fail while
// the server is down and succeed again after it returns.
func (s *Server) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Kill sends SIGKILL to the server and waits for the process to exit: a real
// crash, with no chance to close connections cleanly. It does nothing when
// the server is not running.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.signalLocked(syscall.SIGKILL, 0)
}

// Stop sends SIGTERM to the server and waits for it to exit, sending SIGKILL
// if it has not exited within ten seconds. It does nothing when the server is
// not running.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.signalLocked(syscall.SIGTERM, stopGrace)
}

// Restart starts the server again on the same port and waits until it
// answers PING. Data held before is lost. A server still running is stopped
// first, as Stop does. Restart fails the test given to [Start] if the server
// cannot be started, so it must be called from that test's goroutine.
func (s *Server) Restart() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.signalLocked(syscall.SIGTERM, stopGrace)
	if err := s.launchLocked(); err != nil {
		s.t.Fatalf("redistest: restart: %v", err)
	}
}

// Pid returns the process id of the latest redis-server process started for
// s, which may already have exited after Kill or Stop.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc.cmd.Process.Pid
}

// Freeze stops the server with SIGSTOP: its connections stay open but
// nothing is answered, as with a hung or partitioned Redis, so only
// timeouts bound a client's wait. It returns thaw, which resumes it
// (SIGCONT); thaw is also registered with t.Cleanup, and a second call
// does nothing.
func (s *Server) Freeze(t testing.TB) (thaw func()) {
	t.Helper()
	pid := s.Pid()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("redistest: freeze: %v", err)
	}
	var once sync.Once
	thaw = func() { once.Do(func() { _ = syscall.Kill(pid, syscall.SIGCONT) }) }
	t.Cleanup(thaw)
	return thaw
}
