package budget

import (
	"strconv"
	"testing"
	"time"
)

// destinationFlood is how many distinct destinations the bound tests add:
// an attacker choosing hosts within one window.
const destinationFlood = 100_000

// TestThrottleBoundedAt100kDestinations pins that a new destination costs
// bounded work under the lock every call takes, however many exist: a
// throttle that scanned them all per new one took 13.6 s from 16k to 32k
// destinations and slowed a call to an unrelated host from 2 us to 99 us.
// At 100k attacker-chosen hosts within one window it remembers at most its
// cap and examines at most two other destinations per new one, counted,
// not timed; a host in use keeps its history.
func TestThrottleBoundedAt100kDestinations(t *testing.T) {
	th := NewThrottle(ThrottleConfig{})
	th.rand = func() float64 { return 0.5 }
	for range 10 {
		th.Record("api.partner.example", t0, false)
	}
	for i := range destinationFlood {
		now := t0.Add(time.Duration(i) * time.Microsecond)
		th.Record("h"+strconv.Itoa(i)+".attacker.example", now, false)
		if i%1000 == 0 {
			th.Allow("api.partner.example", now) // in use: recently used
		}
	}
	if n := th.dests.Len(); n > maxDestinations {
		t.Errorf("%d destinations remembered, cap %d", n, maxDestinations)
	}
	if v := th.dests.Visited(); v > 2*destinationFlood {
		t.Errorf("new destinations examined %d others for %d calls, want at most 2 each", v, destinationFlood)
	}
	if p := th.RejectProbability("api.partner.example", t0.Add(time.Second)); p == 0 {
		t.Error("the destination in use lost its history to the flood")
	}
}

// TestLocalBudgetBoundedAt100kDestinations: the local budget kept about
// 600 B per destination for five minutes with no cap. At 100k
// destinations within five minutes it remembers at most its cap, examining
// at most two others per new destination.
func TestLocalBudgetBoundedAt100kDestinations(t *testing.T) {
	b := NewLocalClock(Config{}, nil)
	for i := range destinationFlood {
		b.depositAt("h"+strconv.Itoa(i)+".attacker.example", t0.Add(time.Duration(i)*time.Microsecond))
	}
	if n := b.dests.Len(); n > maxDestinations {
		t.Errorf("%d destinations remembered, cap %d", n, maxDestinations)
	}
	if v := b.dests.Visited(); v > 2*destinationFlood {
		t.Errorf("new destinations examined %d others for %d calls, want at most 2 each", v, destinationFlood)
	}
}
