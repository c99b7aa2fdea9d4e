package pgtest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/retrybudget/retrybudget/internal/testenv"
)

// readyTimeout bounds the wait for a started server to accept
// connections, crash recovery included.
const readyTimeout = 60 * time.Second

// stopGrace is how long Stop waits after a fast shutdown request before it
// resorts to SIGKILL.
const stopGrace = 30 * time.Second

// maxStartAttempts bounds retries when a freshly chosen port is taken
// before the server binds it.
const maxStartAttempts = 5

// noPostgres names both ways out of a skip.
const noPostgres = "pgtest: no PostgreSQL: set DATABASE_URL or install postgresql (initdb, postgres)"

// Server is a private PostgreSQL server owned by one test, for fault tests
// that kill and restart the database. Its methods are safe for concurrent
// use.
type Server struct {
	mu   sync.Mutex // guards proc and serialises Kill, Stop and Restart
	proc *process   // the latest process started

	// URL is a connection string for the superuser "postgres" on the
	// database "postgres", over TCP on 127.0.0.1. It stays the same across
	// Restart.
	URL string

	t    testing.TB
	bin  string // directory of initdb and postgres
	dir  string // holds data/ and the socket
	port int
	cred *syscall.Credential // non-nil when the tests run as root
}

// process is one run of postgres, the postmaster, leading its own process
// group so Kill reaches every backend.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd.Wait has returned
	output bytes.Buffer  // read only after exited closes
}

// Start initialises a cluster in a temporary directory, starts postgres on
// a free loopback port with fsync on (the defaults: a committed
// transaction survives a kill), waits until it accepts connections, and
// registers t.Cleanup to kill it and remove the directory. Without the
// binaries the test is skipped, or failed when RequireEnv is set.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := binDir()
	if bin == "" {
		testenv.Unavailable(t, RequireEnv, noPostgres)
	}
	s := &Server{t: t, bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			testenv.Unavailable(t, RequireEnv, "pgtest: running as root, and PostgreSQL refuses root, but there is no postgres user: "+err.Error())
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s.dir = dir
	if s.cred != nil {
		if err := os.Chown(dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	initdb := s.command(filepath.Join(bin, "initdb"), "-D", s.data(), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
	t.Cleanup(s.Kill)
	var lastErr error
	for range maxStartAttempts {
		if s.port, err = freePort(); err != nil {
			t.Fatal(err)
		}
		s.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
		s.mu.Lock()
		lastErr = s.launchLocked()
		s.mu.Unlock()
		if lastErr == nil {
			return s
		}
	}
	t.Fatalf("pgtest: %v", lastErr)
	return nil
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

// command returns cmd as the user the server runs as, in a process group
// of its own, and on Linux killed if the test binary dies first.
func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = procAttr()
	cmd.SysProcAttr.Credential = s.cred
	cmd.Dir = s.dir
	return cmd
}

// launchLocked starts postgres and waits until it accepts connections.
// It requires that s.mu is held.
func (s *Server) launchLocked() error {
	p := &process{exited: make(chan struct{})}
	p.cmd = s.command(filepath.Join(s.bin, "postgres"), "-D", s.data(),
		"-p", strconv.Itoa(s.port), "-k", s.dir, "-c", "listen_addresses=127.0.0.1",
		"-c", "max_connections=100", "-c", "logging_collector=off")
	p.cmd.Stdout, p.cmd.Stderr = &p.output, &p.output
	if err := p.cmd.Start(); err != nil {
		return err
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	s.proc = p
	deadline := time.Now().Add(readyTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, s.URL)
		if err == nil {
			err = conn.Ping(ctx)
			conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("postgres exited before accepting connections: %s", p.output.String())
		default:
		}
		if time.Now().After(deadline) {
			s.killLocked()
			return fmt.Errorf("postgres did not accept connections within %s: %v", readyTimeout, err)
		}
		time.Sleep(20 * time.Millisecond) // polling period, not synchronisation
	}
}

// Kill sends SIGKILL to the postmaster and every backend (its process
// group), as a power cut would stop them, and waits for the postmaster
// to be reaped. Killing a stopped server does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
}

func (s *Server) killLocked() {
	p := s.proc
	if p == nil {
		return
	}
	select {
	case <-p.exited:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
}

// Stop asks for a fast shutdown (SIGINT) and waits for it, killing the
// server after stopGrace.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.proc
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.exited:
	case <-time.After(stopGrace):
		s.killLocked()
	}
}

// Restart starts the server again on the same data directory and port,
// after a Kill or Stop (it kills a running one first), and waits until it
// accepts connections, crash recovery included. It fails the test if the
// server does not come back.
func (s *Server) Restart() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
	var err error
	for range maxStartAttempts {
		// Backends of the killed postmaster may hold its shared memory for
		// a moment after SIGKILL; postgres then refuses to start.
		if err = s.launchLocked(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond) // back-off between start attempts
	}
	s.t.Fatalf("pgtest: restart: %v", err)
}

// binDir returns the directory holding initdb and postgres: the one on
// PATH, else the newest /usr/lib/postgresql/*/bin, else "".
func binDir() string {
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := os.Stat(filepath.Join(filepath.Dir(p), "postgres")); err == nil {
			return filepath.Dir(p)
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi < vj
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i]
		}
	}
	return ""
}

// freePort returns a loopback port nobody listened on a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
