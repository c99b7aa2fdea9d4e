package faultsim

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// TestFloodEndsWithItsProcess: a flood's callers are the process's own, so
// a process that died makes none of its give-ups. Before, they went on in
// a process that reached nothing any more, each call retried against a dead
// network, for hours of a real-time world's clock.
func TestFloodEndsWithItsProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &World{Name: "Memory", Lease: 30 * time.Second, Virtual: true,
			Open: func(*testing.T, *Run) (ledger.Store, func(*Run, bool)) {
				return ledger.NewMemory(ledger.MemoryConfig{}), nil
			}}
		s := drawSchedule(1, w)
		s.Flood = floodSize
		r := newSimRun(t, w, s)

		start := time.Now()
		if n := r.flood(r.newProc(0)); n != floodSize {
			t.Errorf("a live process's flood made %d give-ups, want %d", n, floodSize)
		}
		dead := r.newProc(0)
		dead.die()
		if n := r.flood(dead); n != 0 {
			t.Errorf("a dead process's flood made %d calls, want none", n)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("the floods took %v of the run's clock, want none: each give-up is a 400 answered at once", d)
		}
	})
}
