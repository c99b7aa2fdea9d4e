package budget

import (
	"strconv"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/redistest"
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

// TestRedisBudgetPendingBoundedAt100kDestinations: the Redis budget counts
// each destination's deposits in the process until its next round trip,
// and kept every destination it saw for five minutes with no cap. At 100k
// destinations within one flush interval it remembers at most its cap,
// examining at most two others per new destination, and a destination in
// use keeps the deposits it has not sent yet.
func TestRedisBudgetPendingBoundedAt100kDestinations(t *testing.T) {
	b := newRedis(t, redistest.Client(t), RedisConfig{Prefix: redistest.Prefix(t)})
	b.now = func() time.Time { return t0 } // one instant: nothing is flushed
	ctx := t.Context()
	for i := range destinationFlood {
		b.Deposit(ctx, "h"+strconv.Itoa(i)+".attacker.example")
		if i%1000 == 0 {
			b.Deposit(ctx, "api.partner.example")
		}
	}
	b.dests.mu.Lock()
	defer b.dests.mu.Unlock()
	if n := b.dests.dests.Len(); n > maxDestinations {
		t.Errorf("%d destinations remembered, cap %d", n, maxDestinations)
	}
	if v := b.dests.dests.Visited(); v > 2*destinationFlood {
		t.Errorf("new destinations examined %d others for %d calls, want at most 2 each", v, destinationFlood)
	}
	if d, ok := b.dests.dests.Get("api.partner.example"); !ok || d.n.Load() != destinationFlood/1000 {
		t.Errorf("the destination in use: remembered %v; want its %d deposits not yet sent", ok, destinationFlood/1000)
	}
}
