package stallmeter

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// A Meter sees the process starved of CPU: on one processor shared with
// eight busy goroutines for 200ms, its goroutine wakes about one 10ms time
// slice late or more, and Excused allows that much.
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
	if late < 5*time.Millisecond {
		t.Fatalf("lateness %v after 200ms of starvation; want at least 5ms", late)
	}
	if got, ok := m.Excused(time.Millisecond+late, time.Millisecond); !ok || got < late {
		t.Errorf("Excused(1ms+%v, 1ms) = %v, %v; want the lateness excused", late, got, ok)
	}
	if _, ok := m.Excused(time.Hour, time.Millisecond); ok {
		t.Error("Excused(1h, 1ms) = ok; want an hour over the bound refused")
	}
}
