package peers

import (
	"bufio"
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Instruction counts of the success path: counts, not seconds, so they
// hold still on a loaded machine.
//
// TestInstructions runs this test binary under valgrind's callgrind once
// per contender, method, path and call count: each run is
// TestInstructionDriver, which sends instrWarmup calls and then N more.
// Run twice with different N, the difference of the two totals divided by
// the difference of N is the instructions of one call, start-up and
// warm-up removed. It counts user-space instructions of the whole process:
// the client, the in-process server over loopback, the collector when it
// runs; not the kernel's.
const (
	instrEnv    = "PEERS_INSTRUCTIONS" // set to 1 to run TestInstructions
	driveEnv    = "PEERS_DRIVE"        // contender/method/path/N, for the driver
	instrWarmup = 200
)

// instrContenders are the libraries counted, by name. The "+ key" ones
// carry an Idempotency-Key that the caller sets on each POST itself, as
// go-retryablehttp's users must: beside bare's, the key's cost on the
// wire; beside go-retryablehttp's, the same keyed POST as retrybudget's.
var instrContenders = map[string]func() contender{
	"bare": bare, "retrybudget": rbDefault, "go-retryablehttp": retryable,
	"bare + key": func() contender { return callerKey(bare()) }, "go-retryablehttp + key": func() contender { return callerKey(retryable()) },
}

// callerKey returns c with the caller setting a key on every request
// before c sees it.
func callerKey(c contender) contender {
	inner := c.rt
	c.name += " + key"
	c.rt = func(base http.RoundTripper) http.RoundTripper {
		rt := inner(base)
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			req.Header.Set("Idempotency-Key", callerKeyValue) // the test's own request: the caller's to change
			return rt.RoundTrip(req)
		})
	}
	return c
}

// callerKeyValue is the key the caller sets, a constant, so that making
// it costs nothing per call.
const callerKeyValue = "order-0001"

// roundTripFunc is a function as an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// keyCopy is the driver's stand-in for the header copy a keyed call
// needs (retrybudget's withValue): the caller's header map copied whole,
// the key added to the copy. It is counted on its own, to be read beside
// the keyed POST's own instructions.
const keyCopy = "key header copy"

// TestInstructions prints instructions per call for bare net/http,
// retrybudget and go-retryablehttp, GET and POST (retrybudget's POST
// carries a generated Idempotency-Key), over loopback to an in-process
// server and through a base without a network, and each library's own
// instructions (minus bare's). Set PEERS_INSTRUCTIONS=1; it takes a few
// minutes. PEERS_INSTR_CALLS sets the smaller N of the no-network runs
// (5,000; the loopback runs use a fifth, and the larger N is 3 times the
// smaller). The POSTs are also counted with a key that the caller sets.
func TestInstructions(t *testing.T) {
	if os.Getenv(instrEnv) == "" {
		t.Skipf("set %s=1 to count instructions per call under valgrind", instrEnv)
	}
	valgrind, err := exec.LookPath("valgrind")
	if err != nil {
		t.Skipf("SKIPPED: no valgrind on PATH (%v): instruction counts need valgrind --tool=callgrind (apt-get install valgrind)", err)
	}
	small := 5000
	if n, err := strconv.Atoi(os.Getenv("PEERS_INSTR_CALLS")); err == nil && n > 0 {
		small = n
	}
	// The collector runs at heap sizes, not per call: with it on, whether
	// a run of N calls holds one cycle more than another moves the count
	// by thousands per call. Off by default, so the counts are the calls'
	// own work (allocation included, collection not); PEERS_INSTR_GOGC
	// sets another GOGC.
	gogc := cmp.Or(os.Getenv("PEERS_INSTR_GOGC"), "off")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	count := func(spec string) float64 {
		out := filepath.Join(dir, "callgrind.out")
		cmd := exec.Command(valgrind, "--tool=callgrind", "--callgrind-out-file="+out,
			exe, "-test.run=^TestInstructionDriver$", "-test.count=1")
		// Valgrind 3.19 cannot deliver the signals of Go's asynchronous
		// preemption to callgrind, nor decode RDTSCP: both off.
		cmd.Env = append(os.Environ(), driveEnv+"="+spec, "GODEBUG="+godebug("asyncpreemptoff=1,cpu.rdtscp=off"), "GOGC="+gogc)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", spec, err, b)
		}
		n, err := callgrindTotal(out)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	perCall := func(name, method, path string) float64 {
		n1 := small
		if path == "loopback" {
			n1 = max(small/5, 1)
		}
		n2 := 3 * n1
		i1 := count(fmt.Sprintf("%s/%s/%s/%d", name, method, path, n1))
		i2 := count(fmt.Sprintf("%s/%s/%s/%d", name, method, path, n2))
		return (i2 - i1) / float64(n2-n1)
	}
	var b strings.Builder
	b.WriteString("| library | method | path | instructions/call | own instructions/call (minus bare) |\n|---|---|---|---|---|\n")
	for _, path := range []string{"memory", "loopback"} {
		for _, method := range []string{"GET", "POST"} {
			bare := perCall("bare", method, path)
			fmt.Fprintf(&b, "| bare | %s | %s | %.0f | — |\n", method, path, bare)
			names := []string{"retrybudget", "go-retryablehttp"}
			if method == "POST" {
				names = append(names, "bare + key", "go-retryablehttp + key")
			}
			for _, name := range names {
				n := perCall(name, method, path)
				fmt.Fprintf(&b, "| %s | %s | %s | %.0f | %+.0f |\n", name, method, path, n, n-bare)
			}
		}
	}
	fmt.Fprintf(&b, "| %s | — | — | %.0f | — |\n", keyCopy, perCall("keycopy", "POST", "memory"))
	t.Logf("instructions per call (callgrind; (I(3N) - I(N)) / 2N after %d warm-up calls; GOGC=%s; memory: a base without a network; loopback: an in-process server, whose instructions are counted too)\n\n%s",
		instrWarmup, gogc, b.String())
}

// godebug returns GODEBUG with settings added after the caller's own.
func godebug(settings string) string {
	if old := os.Getenv("GODEBUG"); old != "" {
		return old + "," + settings
	}
	return settings
}

// callgrindTotal reads the total instruction count from a callgrind
// output file: its "summary:" line (or "totals:" in newer versions).
func callgrindTotal(path string) (float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		for _, prefix := range []string{"summary:", "totals:"} {
			if rest, ok := strings.CutPrefix(sc.Text(), prefix); ok {
				fields := strings.Fields(rest)
				if len(fields) > 0 {
					return strconv.ParseFloat(fields[0], 64)
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no summary line in %s", path)
}

// TestInstructionDriver is what TestInstructions runs under valgrind:
// PEERS_DRIVE=contender/method/path/N sends instrWarmup calls, then N
// more. Without PEERS_DRIVE it does nothing.
func TestInstructionDriver(t *testing.T) {
	spec := os.Getenv(driveEnv)
	if spec == "" {
		t.Skipf("run by TestInstructions (%s=contender/method/path/N)", driveEnv)
	}
	parts := strings.Split(spec, "/")
	if len(parts) != 4 {
		t.Fatalf("%s=%q: want contender/method/path/N", driveEnv, spec)
	}
	name, method, path := parts[0], parts[1], parts[2]
	n, err := strconv.Atoi(parts[3])
	if err != nil {
		t.Fatal(err)
	}
	var send func()
	if name == "keycopy" {
		h := http.Header{"Content-Type": {"application/json"}}
		key := []string{"5f0c7e0e-6c39-4b8e-9a62-0d3f0a9c1e21"}
		var sink http.Header
		send = func() {
			out := maps.Clone(h)
			out["Idempotency-Key"] = key
			sink = out
		}
		defer func() { _ = sink }()
	} else {
		mk, ok := instrContenders[name]
		if !ok {
			t.Fatalf("no contender %q", name)
		}
		srv := successServer()
		defer srv.Close()
		var base http.RoundTripper = canned{}
		if path == "loopback" {
			tr := newBase()
			defer tr.CloseIdleConnections()
			base = tr
		}
		send = sender(mk().rt(base), method, srv.URL, t.Fatal)
	}
	for range instrWarmup {
		send()
	}
	for range n {
		send()
	}
}
