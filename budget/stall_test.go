package budget

import (
	"sync/atomic"
	"time"
)

// stallMeter measures how late this process's sleeping goroutines wake up.
// On a machine starved of CPU (a throttled container, a CI runner shared
// with other jobs) a goroutine waiting on a timer can wake hundreds of
// milliseconds late, and a decision that waited on its timeout with it.
// Fault tests add the worst lateness seen to their bound, and say so, so
// that a slow machine is told apart from a decision that ignored its
// timeout: the meter's goroutine, doing nothing but sleep, would not be
// late in the second case.
type stallMeter struct {
	worst atomic.Int64 // nanoseconds
	stop  chan struct{}
	done  chan struct{}
}

// stallTick is the meter's sleep; short enough to catch every stall.
const stallTick = time.Millisecond

func startStallMeter() *stallMeter {
	m := &stallMeter{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			select {
			case <-m.stop:
				return
			default:
			}
			start := time.Now()
			time.Sleep(stallTick)
			if late := time.Since(start) - stallTick; int64(late) > m.worst.Load() {
				m.worst.Store(int64(late))
			}
		}
	}()
	return m
}

// lateness returns the worst lateness seen so far. It first waits a few
// ticks, so that a stall that has just ended is counted.
func (m *stallMeter) lateness() time.Duration {
	time.Sleep(10 * stallTick)
	return time.Duration(m.worst.Load())
}

// close stops the meter and waits for its goroutine to end.
func (m *stallMeter) close() {
	close(m.stop)
	<-m.done
}
