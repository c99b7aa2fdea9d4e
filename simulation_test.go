package retrybudget_test

import (
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/faultsim"
	"github.com/retrybudget/retrybudget/ledger"
)

// TestSimulation runs the fault simulator (faultsim, which lists
// the faults and the invariants) against ledger.Memory in virtual time and
// against Redis with a replica and a Redis limiter in real time. A failing
// schedule prints its seed; rerun it with -sim.seed=N (or
// RETRYBUDGET_SIM_SEED=N). The CI budget is 800 Memory and 100 Redis
// schedules, from a first seed that moves with each run (-sim.from=N or
// RETRYBUDGET_SIM_FROM=N fixes it); -sim.schedules=N or
// RETRYBUDGET_LONG=1 (20,000 and 300) runs more. The PostgreSQL world runs in ledger/pgledger's module.
func TestSimulation(t *testing.T) {
	for _, w := range []*faultsim.World{memoryWorld(), redisWorld()} {
		t.Run(w.Name, func(t *testing.T) { faultsim.Simulate(t, w) })
	}
}

// memoryWorld is ledger.Memory in virtual time: a 30 s lease costs nothing.
func memoryWorld() *faultsim.World {
	return &faultsim.World{Name: "Memory", Lease: 30 * time.Second, Slack: 100 * time.Millisecond,
		Virtual: true, Inbound: true, CI: 800, Long: 20_000, Parallel: 4,
		Open: func(*testing.T, *faultsim.Run) (ledger.Store, func(*faultsim.Run, bool)) {
			return ledger.NewMemory(ledger.MemoryConfig{}), nil
		}}
}
