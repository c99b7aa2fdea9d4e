package peers

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testSuccessPath is BenchmarkSuccessPath made robust to a shared, noisy
// two-core machine: many short rounds, every contender in a fresh random
// order each round, and per contender the median of its per-round result
// against the bare base, each taken from runs a fraction of a second apart
// so that load from other processes mostly cancels out.
//
// Over loopback the result is the ratio of ns/op to bare's. Through the
// canned base (no network) it is the ns/op added to bare's: the library's
// own CPU cost per call. Allocations are counted through the canned base
// with testing.AllocsPerRun, so no server allocation is mixed in.
// PEERS_ROUNDS sets the number of rounds (21); more rounds narrow the
// medians.
func testSuccessPath(t *testing.T) {
	rounds := 21
	if n, err := strconv.Atoi(os.Getenv("PEERS_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	srv := successServer()
	defer srv.Close()
	type entry struct {
		c       contender
		method  string
		wire    func() // over loopback
		mem     func() // through the canned base
		wireNs  []float64
		memNs   []float64
		ratio   []float64 // loopback ns/op over bare's, per round
		added   []float64 // canned ns/op minus bare's, per round
		allocs  float64
		bareIdx int
	}
	var entries []*entry
	for _, c := range []contender{bare(), rbDefault(), retryable(), failsafe()} {
		loop := newBase()
		defer loop.CloseIdleConnections()
		wire, mem := c.rt(loop), c.rt(canned{})
		for i, method := range []string{"GET", "POST"} {
			entries = append(entries, &entry{c: c, method: method, bareIdx: i,
				wire: sender(wire, method, srv.URL, t.Fatal), mem: sender(mem, method, srv.URL, t.Fatal)})
		}
	}
	for _, e := range entries {
		e.wire() // warm the connection pool
		e.allocs = testing.AllocsPerRun(1000, e.mem)
	}
	timed := func(f func(), n int) float64 {
		start := time.Now()
		for range n {
			f()
		}
		return float64(time.Since(start).Nanoseconds()) / float64(n)
	}
	for range rounds {
		for _, i := range rand.Perm(len(entries)) {
			e := entries[i]
			e.wireNs = append(e.wireNs, timed(e.wire, 300))
			e.memNs = append(e.memNs, timed(e.mem, 3000))
		}
		for _, e := range entries {
			bare := entries[e.bareIdx]
			last := len(e.wireNs) - 1
			e.ratio = append(e.ratio, e.wireNs[last]/bare.wireNs[last])
			e.added = append(e.added, e.memNs[last]-bare.memNs[last])
		}
	}
	var b strings.Builder
	b.WriteString("| library | method | loopback ns/op | loopback ratio to bare | own cost ns/op (no network) | allocs/op (no network) | allocs delta |\n" +
		"|---|---|---|---|---|---|---|\n")
	for _, e := range entries {
		fmt.Fprintf(&b, "| %s | %s | %.0f | %.2f× | %+.0f | %.0f | %+.0f |\n", e.c.name, e.method,
			med(e.wireNs), med(e.ratio), med(e.added), e.allocs, e.allocs-entries[e.bareIdx].allocs)
	}
	t.Logf("success path: medians of %d interleaved rounds (300 loopback calls, 3000 calls without network, per contender and round)\n\n%s",
		rounds, b.String())
}

// med returns the median of v: the mean of the two middle values when
// their number is even.
func med(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[n/2]
}

var _ http.RoundTripper = canned{}
