package stallmeter

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// A Meter sees the process starved of CPU: on one processor shared with
// eight busy goroutines for 200ms, its goroutine wakes tens of milliseconds
// late (each busy one runs for a 10ms time slice before it is preempted).
func TestMeterSeesAStall(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	m := Start()
	defer m.Close()
	var wg sync.WaitGroup
	end := time.Now().Add(200 * time.Millisecond)
	for range 8 {
		wg.Go(func() {
			for time.Now().Before(end) {
			}
		})
	}
	wg.Wait()
	late := m.Lateness()
	t.Logf("lateness %v", late)
	if late < 5*time.Millisecond {
		t.Fatalf("lateness %v after 200ms of starvation; want at least 5ms", late)
	}
}
