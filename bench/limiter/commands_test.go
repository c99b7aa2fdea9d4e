package limiterbench

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/retrybudget/retrybudget/internal/redistest"
)

// TestRedisCommands breaks down where Redis spends its time for each
// contender: 20,000 decisions at LIMITER_COMPARE_CONC (64) on a private
// server, then every command's calls and µs from INFO commandstats per
// round trip, the commands a script runs included (their µs are also in
// the script's). The script's own Lua time is its µs minus theirs. Set
// LIMITER_COMMANDS=1.
func TestRedisCommands(t *testing.T) {
	if os.Getenv("LIMITER_COMMANDS") == "" {
		t.Skip("set LIMITER_COMMANDS=1 to break Redis time down by command")
	}
	c := 64
	if n, err := strconv.Atoi(os.Getenv("LIMITER_COMPARE_CONC")); err == nil && n > 0 {
		c = n
	}
	const decisions = 20_000
	r := newRig(t)
	var b strings.Builder
	fmt.Fprintf(&b, "per round trip at concurrency %d (%d decisions):\n\n| contender | decisions per round trip | command | calls | µs |\n|---|---|---|---|---|\n", c, decisions)
	for _, ct := range r.contenders(t) {
		for w := range c {
			if err := ct.op(context.Background(), w); err != nil {
				t.Fatal(err)
			}
		}
		before, err := redistest.ReadLoad(context.Background(), r.stats)
		if err != nil {
			t.Fatal(err)
		}
		var next atomic.Int64
		m := r.measure(t, c, func(ctx context.Context, w int) bool {
			if next.Add(1) > decisions {
				return false
			}
			if err := ct.op(ctx, w); err != nil {
				t.Error(err)
				return false
			}
			return true
		}, nil)
		after, err := redistest.ReadLoad(context.Background(), r.stats)
		if err != nil {
			t.Fatal(err)
		}
		trips := float64(m.trips)
		for _, n := range slices.Sorted(maps.Keys(after.Commands)) {
			s := after.Spent(before, n)
			if s.Calls == 0 || n == "info" {
				continue
			}
			fmt.Fprintf(&b, "| %s | %.1f | %s | %.2f | %.2f |\n", ct.name, float64(m.decisions)/trips, n, float64(s.Calls)/trips, float64(s.Usec)/trips)
		}
	}
	t.Log("\n" + b.String())
}
