package faultsim

import (
	"sync"
	"time"
)

// stallProbe measures how long the test process itself was not run: a
// goroutine asks to wake every stallTick and records how late each
// wakeup came. On a loaded machine (two cores, other processes busy, the
// test under nice) the whole process can go unscheduled for tens of
// milliseconds; a timer the library set fires that much late, whatever
// the library does. The timing invariants add the stall measured during a
// call to their slack, so that they hold the library to what it
// documents (its Timeout, the caller's deadline, plus a few milliseconds
// of scheduling) and not to the machine's load.
type stallProbe struct {
	mu   sync.Mutex // guards ring and next
	ring [stallRing]stallSample
	next int
	stop chan struct{}
}

// stallSample is one late wakeup: due at due, late by late.
type stallSample struct {
	due  time.Time
	late time.Duration
}

const (
	stallTick = 5 * time.Millisecond
	// stallRing holds the last late wakeups: with stallMin, far more
	// than a schedule's calls span.
	stallRing = 4096
	// stallMin is the lateness a wakeup must have to be recorded: below
	// it is the few milliseconds of scheduling the library documents.
	stallMin = 2 * time.Millisecond
)

func startStallProbe() *stallProbe {
	p := &stallProbe{stop: make(chan struct{})}
	go func() {
		t := time.NewTimer(stallTick)
		defer t.Stop()
		for {
			due := time.Now().Add(stallTick)
			t.Reset(stallTick)
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
			if late := time.Since(due); late > stallMin {
				p.mu.Lock()
				p.ring[p.next%stallRing] = stallSample{due: due, late: late}
				p.next++
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// during returns how long the process was stalled between from and to:
// the lateness of the wakeups due then.
func (p *stallProbe) during(from, to time.Time) time.Duration {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var sum time.Duration
	for i := max(p.next-stallRing, 0); i < p.next; i++ {
		s := p.ring[i%stallRing]
		if !s.due.Before(from) && !s.due.After(to) {
			sum += s.late
		}
	}
	return sum
}

func (p *stallProbe) close() {
	if p != nil {
		close(p.stop)
	}
}
