package budget

import (
	"testing"
	"time"
)

// With every attempt refused, the reject probability is n/(n+1): 0, then
// 1/2, which a pick of 0.5 still passes, then 2/3 and more, which it fails.
func TestThrottleRejectsWhileRefused(t *testing.T) {
	th := NewThrottle(ThrottleConfig{})
	th.rand = func() float64 { return 0.5 }
	sent := 0
	for range 100 {
		if th.Allow("api", t0) {
			sent++
			th.Record("api", t0, false)
		}
	}
	if sent != 2 {
		t.Fatalf("%d calls allowed; want the first two", sent)
	}
	if pr := th.RejectProbability("api", t0); pr != 2.0/3 {
		t.Fatalf("reject probability %v; want 2/3 after two refused attempts", pr)
	}
}

func TestThrottleLetsAcceptedTrafficThrough(t *testing.T) {
	th := NewThrottle(ThrottleConfig{})
	th.rand = func() float64 { return 0 }
	for range 50 {
		if !th.Allow("api", t0) {
			t.Fatal("throttled while every attempt is accepted")
		}
		th.Record("api", t0, true)
	}
	if pr := th.RejectProbability("api", t0.Add(time.Second)); pr != 0 {
		t.Fatalf("reject probability %v; want 0", pr)
	}
}
