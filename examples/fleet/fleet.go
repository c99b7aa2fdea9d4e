package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"
)

// workers is the number of worker processes.
const workers = 3

// tenants is the load every worker process runs: job loops per tenant.
// acme has a large backlog, zeta a small one; both always have work, so
// the fair queue should give each about half of the provider's limit.
var tenants = []struct {
	name  string
	loops int
}{
	{"acme", 16},
	{"zeta", 1},
}

// readyTimeout bounds how long a worker may take to start, and
// reportTimeout how long it may take to report once the run has ended.
const (
	readyTimeout  = 30 * time.Second
	reportTimeout = 30 * time.Second
)

// secretEnv holds the per-deployment secret the quickstart reads from the
// environment, base64.
const secretEnv = "RETRYBUDGET_SECRET"

// run starts the provider (and a private Redis when opts.redis is empty),
// runs the worker processes for opts.duration and returns what the
// provider counted and the workers reported. It stops everything it
// started before returning.
func run(ctx context.Context, opts options) (*summary, error) {
	logw := &syncWriter{w: opts.log}
	if opts.log == nil {
		logw.w = io.Discard
	}
	addr, redisDesc := opts.redis, redisName(opts.redis)
	if addr == "" {
		r, err := startRedis(ctx)
		if err != nil {
			return nil, err
		}
		defer r.stop()
		addr, redisDesc = r.addr, r.addr+" (a private redis-server, stopped at exit)"
	}
	if err := pingRedis(ctx, addr); err != nil {
		return nil, err
	}

	env, generated := secrets()
	apiKey := "sk_test_" + randomHex(12)
	p, err := startProvider(apiKey, opts.rate)
	if err != nil {
		return nil, err
	}
	defer p.close()
	env = append(env, "REDIS_ADDR="+addr, "PROVIDER_API_KEY="+apiKey)

	fmt.Fprintf(logw, "fleet: Redis %s; provider %s meters one API key at %d req/s\n", redisDesc, p.url, opts.rate)
	if generated {
		fmt.Fprintf(logw, "fleet: a secret generated for this run; set %s (32 random bytes, base64) to use your own\n", secretEnv)
	}

	cfg := workerConfig{Provider: p.url, Rate: opts.rate, Run: randomHex(3), Loops: map[string]int{}, FirstCome: opts.firstCome}
	for _, t := range tenants {
		cfg.Loops[t.name] = t.loops
	}
	f, err := startFleet(ctx, opts.exe, env, cfg, logw)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(logw, "fleet: %d workers ready; running for %v\n", workers, opts.duration)
	start := time.Now()
	until := start.Add(opts.duration)
	reports, codes, err := f.run(until)
	if err != nil {
		return nil, err
	}
	s := newSummary(until.Sub(start), opts.rate, p.counts(), reports, codes)
	s.firstCome = opts.firstCome
	return s, nil
}

// secrets returns the environment that carries the per-deployment secret
// to the workers: the parent's own when set, else a random one, and
// whether it was generated.
func secrets() (env []string, generated bool) {
	env = os.Environ()
	if os.Getenv(secretEnv) != "" {
		return env, false
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return append(env, secretEnv+"="+base64.StdEncoding.EncodeToString(b)), true
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// fleet is the running worker processes.
type fleet struct {
	procs  []*workerProc
	cancel context.CancelFunc // kills every worker still running
}

// workerProc is one worker process and the lines it prints on stdout.
type workerProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // closed at the end of its stdout
	code  int         // exit status, once waited
	err   error       // Wait's error, once waited
	done  bool        // waited
}

// startFleet starts the worker processes and waits until each is ready.
func startFleet(ctx context.Context, exe string, env []string, cfg workerConfig, logw io.Writer) (*fleet, error) {
	ctx, cancel := context.WithCancel(ctx)
	f := &fleet{cancel: cancel}
	for i := range workers {
		cfg.Index = i + 1
		js, _ := json.Marshal(cfg)
		cmd := exec.CommandContext(ctx, exe)
		cmd.Env = append(slices.Clip(env), workerEnv+"="+string(js))
		cmd.Stderr = logw
		cmd.WaitDelay = time.Second
		stdin, err := cmd.StdinPipe()
		if err != nil {
			f.stop(0)
			return nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			f.stop(0)
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			f.stop(0)
			return nil, fmt.Errorf("start worker %d: %w", i+1, err)
		}
		w := &workerProc{cmd: cmd, stdin: stdin, lines: make(chan string)}
		go w.read(stdout)
		f.procs = append(f.procs, w)
	}
	deadline := time.NewTimer(readyTimeout)
	defer deadline.Stop()
	for i, w := range f.procs {
		if _, err := w.line(readyLine, deadline.C); err != nil {
			f.stop(0)
			return nil, fmt.Errorf("worker %d did not start: %w", i+1, err)
		}
	}
	return f, nil
}

// read passes the process's stdout on, line by line.
func (w *workerProc) read(stdout io.Reader) {
	defer close(w.lines)
	s := bufio.NewScanner(stdout)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		w.lines <- s.Text()
	}
}

// line returns the rest of the first line that starts with prefix.
func (w *workerProc) line(prefix string, deadline <-chan time.Time) (string, error) {
	for {
		select {
		case l, ok := <-w.lines:
			if !ok {
				w.wait()
				return "", fmt.Errorf("exited (%v) before printing %q", w.err, prefix)
			}
			if rest, found := strings.CutPrefix(l, prefix); found {
				return rest, nil
			}
		case <-deadline:
			return "", fmt.Errorf("no %q line in time", prefix)
		}
	}
}

// run tells every worker to go until until, then collects their reports
// and exit statuses.
func (f *fleet) run(until time.Time) ([]report, []int, error) {
	for i, w := range f.procs {
		_, err := fmt.Fprintf(w.stdin, "%s%d\n", goPrefix, until.UnixNano())
		w.stdin.Close()
		if err != nil {
			f.stop(0)
			return nil, nil, fmt.Errorf("worker %d: %w", i+1, err)
		}
	}
	deadline := time.NewTimer(time.Until(until) + reportTimeout)
	defer deadline.Stop()
	reports := make([]report, len(f.procs))
	codes := make([]int, len(f.procs))
	var errs []error
	for i, w := range f.procs {
		line, err := w.line(reportPrefix, deadline.C)
		if err == nil {
			err = json.Unmarshal([]byte(line), &reports[i])
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("worker %d: %w", i+1, err))
		}
	}
	// A worker that reported exits on its own; one that did not is
	// killed.
	grace := reportTimeout
	if len(errs) > 0 {
		grace = 0
	}
	f.stop(grace)
	for i, w := range f.procs {
		codes[i] = w.code
	}
	return reports, codes, errors.Join(errs...)
}

// stop waits for every worker to exit, reading what is left of its
// stdout, and kills those still running after grace (at once when grace
// is zero).
func (f *fleet) stop(grace time.Duration) {
	t := time.AfterFunc(grace, f.cancel)
	defer t.Stop()
	for _, w := range f.procs {
		for range w.lines {
		}
		w.wait()
	}
	f.cancel()
}

// wait reaps the process once and records its exit status.
func (w *workerProc) wait() {
	if w.done {
		return
	}
	w.done = true
	w.err = w.cmd.Wait()
	w.code = w.cmd.ProcessState.ExitCode()
}

// syncWriter serialises writes from the workers' stderr copiers.
type syncWriter struct {
	mu sync.Mutex // guards w
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
