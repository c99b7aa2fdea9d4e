// Package stallmeter measures how late this process's sleeping goroutines
// wake up, for fault tests whose bounds are wall-clock times.
//
// On a machine starved of CPU (a throttled container, a CI runner shared
// with other jobs) a goroutine waiting on a timer can wake hundreds of
// milliseconds late, and a decision that waited on its timeout with it.
// Fault tests add the worst lateness seen to their bound, and say so, so
// that a slow machine is told apart from a call that ignored its timeout:
// the meter's goroutine, doing nothing but sleep, would not be late in the
// second case.
package stallmeter

import (
	"sync/atomic"
	"time"
)

// Meter measures the lateness of a goroutine that does nothing but sleep.
type Meter struct {
	worst atomic.Int64 // nanoseconds
	stop  chan struct{}
	done  chan struct{}
}

// tick is the meter's sleep; short enough to catch every stall.
const tick = time.Millisecond

// Start starts a Meter; Close stops it.
func Start() *Meter {
	m := &Meter{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			select {
			case <-m.stop:
				return
			default:
			}
			start := time.Now()
			time.Sleep(tick)
			if late := time.Since(start) - tick; int64(late) > m.worst.Load() {
				m.worst.Store(int64(late))
			}
		}
	}()
	return m
}

// Lateness returns the worst lateness seen so far. It first waits a few
// ticks, so that a stall that has just ended is counted.
func (m *Meter) Lateness() time.Duration {
	time.Sleep(10 * tick)
	return m.Worst()
}

// Worst returns the worst lateness seen so far, without waiting.
func (m *Meter) Worst() time.Duration {
	return time.Duration(m.worst.Load())
}

// Excused reports whether an operation that took took stayed within bound
// once the machine's stalls are added to it, and the lateness it allowed.
// A test fails when ok is false, and logs late when took exceeded bound.
func (m *Meter) Excused(took, bound time.Duration) (late time.Duration, ok bool) {
	if took <= bound {
		return 0, true
	}
	late = m.Lateness()
	return late, took <= bound+late
}

// Close stops the meter and waits for its goroutine to end.
func (m *Meter) Close() {
	close(m.stop)
	<-m.done
}
