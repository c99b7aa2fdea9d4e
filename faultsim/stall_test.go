package faultsim

import (
	"testing"
	"time"
)

// TestStallProbeCountsOnlyTheStallsOfTheInterval: during sums the
// lateness of the wakeups due inside the interval asked for, and only
// those, so a stall before or after a call never excuses it.
func TestStallProbeCountsOnlyTheStallsOfTheInterval(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &stallProbe{}
	for _, s := range []stallSample{
		{due: t0, late: 40 * time.Millisecond},
		{due: t0.Add(100 * time.Millisecond), late: 30 * time.Millisecond},
		{due: t0.Add(150 * time.Millisecond), late: 20 * time.Millisecond},
		{due: t0.Add(300 * time.Millisecond), late: 80 * time.Millisecond},
	} {
		p.ring[p.next%stallRing] = s
		p.next++
	}
	for _, c := range []struct {
		from, to time.Duration
		want     time.Duration
	}{
		{50 * time.Millisecond, 200 * time.Millisecond, 50 * time.Millisecond},
		{0, 300 * time.Millisecond, 170 * time.Millisecond},
		{160 * time.Millisecond, 290 * time.Millisecond, 0},
	} {
		if got := p.during(t0.Add(c.from), t0.Add(c.to)); got != c.want {
			t.Errorf("during(%v, %v) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
	var none *stallProbe // virtual time: no probe
	if got := none.during(t0, t0.Add(time.Hour)); got != 0 {
		t.Errorf("a nil probe's during = %v, want 0", got)
	}
}

// TestStallProbeKeepsOnlyTheLastSamples: the ring holds the last
// stallRing late wakeups; older ones are overwritten, never counted twice.
func TestStallProbeKeepsOnlyTheLastSamples(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &stallProbe{}
	for i := range stallRing + 10 {
		p.ring[p.next%stallRing] = stallSample{due: t0.Add(time.Duration(i) * time.Millisecond), late: time.Millisecond}
		p.next++
	}
	if got := p.during(t0, t0.Add(time.Hour)); got != stallRing*time.Millisecond {
		t.Errorf("during over the whole ring = %v, want %v (the last %d samples)", got, stallRing*time.Millisecond, stallRing)
	}
}
