package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/retrybudget/retrybudget/internal/redistest"
)

// suite sizes: the short mode runs in CI; RETRYBUDGET_LONG=1 runs the long
// mode.
func sizes() (actions, workers int) {
	if os.Getenv("RETRYBUDGET_LONG") == "1" {
		return 10000, 4
	}
	return 400, 4
}

const (
	providerRate  = 40 // requests per second per credential, enforced
	providerBurst = 5
	limiterRate   = 32 // the fleet's shared limit, under the provider's
)

// worker is one running worker process.
type worker struct {
	index int
	cmd   *exec.Cmd
	done  chan struct{} // closed when its output ended and it exited
}

// results collects the workers' report lines; the last line per action wins
// (a restarted worker re-runs its actions).
type results struct {
	mu       sync.Mutex // guards all below
	final    map[string]string
	done     int // DONE lines, restarts included
	progress chan struct{}
}

func (r *results) add(line string) {
	f := strings.Fields(line)
	if len(f) < 2 || (f[0] != "DONE" && f[0] != "TERMINAL") {
		return
	}
	r.mu.Lock()
	r.final[f[1]] = line
	if f[0] == "DONE" {
		r.done++
	}
	r.mu.Unlock()
	select {
	case r.progress <- struct{}{}:
	default:
	}
}

func (r *results) doneCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done
}

func startWorker(t *testing.T, idx int, env []string, res *results) *worker {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWorker$", "-test.count=1", "-test.timeout=20m")
	cmd.Env = append(append(os.Environ(), env...), envRole+"=worker", envIndex+"="+strconv.Itoa(idx))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &worker{index: idx, cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			res.add(sc.Text())
		}
		cmd.Wait()
	}()
	t.Cleanup(func() { cmd.Process.Kill(); <-w.done })
	return w
}

func TestFaultSuite(t *testing.T) {
	if os.Getenv(envRole) != "" {
		t.Skip("parent only")
	}
	n, nworkers := sizes()
	start := time.Now()
	srv := redistest.Start(t)
	p := newProvider(t, 42, providerRate, providerBurst, 2*attemptTimeout)
	env := []string{envURL + "=" + p.URL, envRedis + "=" + srv.Addr, envPrefix + "=" + redistest.Prefix(t),
		envWorkers + "=" + strconv.Itoa(nworkers), envActions + "=" + strconv.Itoa(n), envRate + "=" + strconv.Itoa(limiterRate)}
	res := &results{final: map[string]string{}, progress: make(chan struct{}, 1)}
	workers := make([]*worker, nworkers)
	for i := range workers {
		workers[i] = startWorker(t, i, env, res)
	}

	// Mid-run faults, driven by progress: a worker is SIGKILLed at a
	// quarter of the actions and started again; Redis is killed at half
	// and restarted after a short outage (it keeps nothing on disk).
	killed, redisRestarted := false, false
	// About 20 actions a second get through here, with the cooldowns the
	// injected 429 bursts cause; allow twice that.
	timeout := time.After(2*time.Minute + time.Duration(n)*100*time.Millisecond)
	for !killed || !redisRestarted {
		select {
		case <-res.progress:
		case <-timeout:
			t.Fatal("the run did not reach its mid-run faults in time")
		}
		d := res.doneCount()
		if !killed && d >= n/4 {
			if err := workers[0].cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			<-workers[0].done
			workers[0] = startWorker(t, 0, env, res)
			killed = true
			t.Logf("%v: worker 0 SIGKILLed and restarted after %d actions done", time.Since(start).Round(time.Millisecond), d)
		}
		if !redisRestarted && d >= n/2 {
			srv.Kill()
			time.Sleep(300 * time.Millisecond) // the outage itself, not a synchronisation
			srv.Restart()
			redisRestarted = true
			t.Logf("%v: Redis killed and restarted after %d actions done", time.Since(start).Round(time.Millisecond), d)
		}
	}
	for _, w := range workers {
		select {
		case <-w.done:
		case <-timeout:
			t.Fatalf("worker %d did not finish in time", w.index)
		}
	}
	report(t, n, nworkers, time.Since(start), p.stats(), res)
}

// report prints the figures as a table and asserts the suite's claims.
func report(t *testing.T, n, nworkers int, took time.Duration, s stats, res *results) {
	res.mu.Lock()
	defer res.mu.Unlock()
	done, terminal, reruns := 0, map[string]int{}, 0
	var lost []string
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("a-%05d", i)
		line, ok := res.final[id]
		switch {
		case !ok:
			lost = append(lost, id)
		case strings.HasPrefix(line, "DONE"):
			done++
			var runs int
			fmt.Sscanf(strings.Fields(line)[2], "runs=%d", &runs)
			reruns += runs - 1
			if s.perAction[id] != 1 {
				t.Errorf("%s completed but the provider applied it %d times", id, s.perAction[id])
			}
		default:
			terminal[strings.Join(strings.Fields(line)[2:4], " ")]++
		}
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(k string, v any) { fmt.Fprintf(tw, "%s\t%v\t\n", k, v) }
	row("actions", n)
	row("worker processes", nworkers)
	row("run time", took.Round(time.Millisecond))
	row("provider arrivals", s.arrivals)
	row("attempts per action", fmt.Sprintf("%.2f", float64(s.arrivals)/float64(n)))
	faults := make([]string, 0, len(s.faults))
	for k := range s.faults {
		faults = append(faults, k)
	}
	sort.Strings(faults)
	for _, k := range faults {
		row("  injected: "+k, s.faults[k])
	}
	row("provider 429s from its rate limit", fmt.Sprintf("%d (%.2f%% of arrivals)", s.rate429, 100*float64(s.rate429)/float64(max(s.arrivals, 1))))
	row("arrivals inside a 429 burst after its first 100 ms", fmt.Sprintf("%d (the fleet pauses the boundary at the first 429)", s.inBurst))
	row("arrival rate", fmt.Sprintf("%.0f/s (provider enforces %d/s, the fleet's limiter %d/s)", float64(s.arrivals)/took.Seconds(), providerRate, limiterRate))
	row("completed", done)
	row("  calls rescheduled by the job loop", reruns)
	for k, v := range terminal {
		row("terminal: "+k, v)
	}
	row("effects applied", s.effects)
	row("duplicate effects", s.duplicates)
	row("lost actions", len(lost))
	tw.Flush()
	t.Logf("end-to-end fault suite\n%s", b.String())

	if s.duplicates != 0 {
		t.Errorf("duplicate effects = %d; want 0", s.duplicates)
	}
	if len(lost) != 0 {
		t.Errorf("lost actions = %d (%v); want 0", len(lost), lost[:min(len(lost), 10)])
	}
	if share := float64(s.rate429) / float64(max(s.arrivals, 1)); share > 0.02 {
		t.Errorf("provider rate-limit 429s = %.2f%% of arrivals; want at most 2%% (the limiter's bound)", 100*share)
	}
	if share := float64(s.inBurst) / float64(max(s.arrivals, 1)); share > 0.02 {
		t.Errorf("%d arrivals (%.2f%%) inside 429 bursts after the fleet was told to pause; want at most 2%%", s.inBurst, 100*share)
	}
	if done+sum(terminal) != n {
		t.Errorf("completed %d + terminal %d != %d actions", done, sum(terminal), n)
	}
}

func sum(m map[string]int) int {
	s := 0
	for _, v := range m {
		s += v
	}
	return s
}
