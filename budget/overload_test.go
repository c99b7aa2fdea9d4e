package budget

import (
	"strconv"
	"testing"
	"time"
)

const patience = 200 * time.Millisecond

// timeOut records n attempts to dest that ran out of time after waiting
// patience, at now.
func timeOut(o *Overload, dest string, n int, now time.Time) {
	for range n {
		o.Record(dest, patience, true, now)
	}
}

// With every attempt out of time, the refuse probability is
// (n − 3)/(n + 1): nothing up to three timeouts, then 1/5 at four, 6/10 at
// nine.
func TestOverloadRefusesWhileAttemptsRunOutOfTime(t *testing.T) {
	o := NewOverload(OverloadConfig{})
	for n, want := range map[int]float64{1: 0, 3: 0, 4: 1.0 / 5, 9: 6.0 / 10} {
		o := NewOverload(OverloadConfig{})
		timeOut(o, "api", n, t0)
		if p := o.RefuseProbability("api", patience, t0); p != want {
			t.Errorf("%d timeouts: refuse probability %v; want %v", n, p, want)
		}
	}
	o.rand = func() float64 { return 0.5 }
	sent := 0
	for range 100 {
		if o.Allow("api", patience, t0) {
			sent++
			o.Record("api", patience, true, t0)
		}
	}
	// 0, 0, 0, 0, 1/5, 2/6, 3/7, 4/8: a pick of 0.5 passes up to 4/8 and
	// fails from 5/9 on.
	if sent != 8 {
		t.Fatalf("%d calls sent; want 8 before the probability passes 1/2", sent)
	}
}

// Attempts answered, however they were answered, keep the probability at
// zero, and a destination that never ran out of time is not even
// remembered.
func TestOverloadLetsAnsweredTrafficThrough(t *testing.T) {
	o := NewOverload(OverloadConfig{})
	o.rand = func() float64 { return 0 }
	for range 1000 {
		if !o.Allow("api", patience, t0) {
			t.Fatal("refused while every attempt is answered")
		}
		o.Record("api", 0, false, t0)
	}
	if !o.Quiet() || o.dests.Len() != 0 {
		t.Fatalf("quiet %v, %d destinations remembered; want quiet and none", o.Quiet(), o.dests.Len())
	}
	// Half the attempts out of time is K=2's bound: still no refusal.
	timeOut(o, "api", 50, t0)
	for range 50 {
		o.Record("api", 0, false, t0)
	}
	if p := o.RefuseProbability("api", patience, t0); p != 0 {
		t.Fatalf("refuse probability %v with half the attempts answered; want 0", p)
	}
	o.Record("api", 0, false, t0)
	timeOut(o, "api", 10, t0)
	// 111 attempts, 51 answered: (111 − 102 − 3)/112.
	if p := o.RefuseProbability("api", patience, t0); p != 6.0/112 {
		t.Fatalf("refuse probability %v; want 6/112", p)
	}
}

// Only a call no more patient than the attempts that ran out is refused:
// one that may wait longer, or without bound, could still be answered.
func TestOverloadRefusesOnlyTheImpatient(t *testing.T) {
	o := NewOverload(OverloadConfig{})
	timeOut(o, "api", 100, t0)
	for _, tt := range []struct {
		patience time.Duration
		refused  bool
	}{{patience / 2, true}, {patience, true}, {patience + time.Millisecond, false}, {0, false}} {
		if p := o.RefuseProbability("api", tt.patience, t0); (p > 0) != tt.refused {
			t.Errorf("patience %v: refuse probability %v; want refused %v", tt.patience, p, tt.refused)
		}
	}
	if p := o.RefuseProbability("other", patience, t0); p != 0 {
		t.Errorf("another destination: refuse probability %v; want 0", p)
	}
	// A timeout whose patience is unknown counts, but shows no patience to
	// be insufficient.
	u := NewOverload(OverloadConfig{})
	for range 100 {
		u.Record("api", 0, true, t0)
	}
	if p := u.RefuseProbability("api", patience, t0); p != 0 {
		t.Errorf("timeouts of unknown patience: refuse probability %v; want 0", p)
	}
}

// The memory fades within a Window: the longest patience that ran out
// leaves with its slot, and a destination whose window holds no timeout
// is forgotten, so the Overload is quiet again.
func TestOverloadForgetsWithinAWindow(t *testing.T) {
	o := NewOverload(OverloadConfig{})
	o.Record("api", 5*patience, true, t0)
	later := t0.Add(500 * time.Millisecond)
	timeOut(o, "api", 20, later)
	if p := o.RefuseProbability("api", 5*patience, later); p == 0 {
		t.Fatal("the patient call is not refused while its patience ran out in the window")
	}
	if p := o.RefuseProbability("api", 5*patience, t0.Add(1100*time.Millisecond)); p != 0 {
		t.Fatalf("refuse probability %v for the patient call a window after its patience ran out; want 0", p)
	}
	if p := o.RefuseProbability("api", patience, t0.Add(1100*time.Millisecond)); p == 0 {
		t.Fatal("the recent timeouts were forgotten with the old one")
	}
	if o.Quiet() {
		t.Fatal("quiet while a destination ran out of time in the window")
	}
	if p := o.RefuseProbability("api", patience, later.Add(1100*time.Millisecond)); p != 0 || !o.Quiet() {
		t.Fatalf("a window later: refuse probability %v, quiet %v; want 0 and quiet", p, o.Quiet())
	}
}

func TestOverloadDisabled(t *testing.T) {
	o := NewOverload(OverloadConfig{Disable: true})
	timeOut(o, "api", 100, t0)
	if !o.Quiet() || !o.Allow("api", patience, t0) || o.dests.Len() != 0 {
		t.Fatal("a disabled Overload counted or refused")
	}
}

// TestOverloadBoundedAt100kDestinations: destinations that time out are
// caller-chosen too (webhook hosts that never answer). At 100k within one
// window it remembers at most its cap, examining at most two others per
// new one; a destination in use keeps its history.
func TestOverloadBoundedAt100kDestinations(t *testing.T) {
	o := NewOverload(OverloadConfig{})
	timeOut(o, "api.partner.example", 10, t0)
	for i := range destinationFlood {
		now := t0.Add(time.Duration(i) * time.Microsecond)
		o.Record("h"+strconv.Itoa(i)+".attacker.example", patience, true, now)
		if i%1000 == 0 {
			o.Allow("api.partner.example", patience, now) // in use: recently used
		}
	}
	if n := o.dests.Len(); n > maxDestinations {
		t.Errorf("%d destinations remembered, cap %d", n, maxDestinations)
	}
	if v := o.dests.Visited(); v > 2*destinationFlood {
		t.Errorf("new destinations examined %d others for %d calls, want at most 2 each", v, destinationFlood)
	}
	if p := o.RefuseProbability("api.partner.example", patience, t0.Add(200*time.Millisecond)); p == 0 {
		t.Error("the destination in use lost its history to the flood")
	}
}

// TestOverloadJudgesATenantByItsOwnAttempts: one tenant's timeouts refuse
// that tenant's calls and no other's, until three tenants ran out of time
// at the destination; a destination keeps at most maxOverloadTenants
// tenants' windows.
func TestOverloadJudgesATenantByItsOwnAttempts(t *testing.T) {
	o := NewOverload(OverloadConfig{})
	for range 20 {
		o.RecordTenant("api", "a", patience, true, t0)
	}
	if p := o.RefuseProbabilityTenant("api", "a", patience, t0); p == 0 {
		t.Error("tenant a's own timeouts refuse none of its calls")
	}
	if p := o.RefuseProbabilityTenant("api", "b", patience, t0); p != 0 {
		t.Errorf("tenant b's refusal probability %v from tenant a's timeouts, want 0", p)
	}
	o.RecordTenant("api", "c", patience, true, t0)
	if p := o.RefuseProbabilityTenant("api", "b", patience, t0); p != 0 {
		t.Errorf("tenant b's refusal probability %v with two tenants timing out, want 0", p)
	}
	o.RecordTenant("api", "d", patience, true, t0)
	if p := o.RefuseProbabilityTenant("api", "b", patience, t0); p == 0 {
		t.Error("three tenants time out, and tenant b's calls are not refused")
	}
	for i := range 10 * maxOverloadTenants {
		o.RecordTenant("api", "t"+strconv.Itoa(i), patience, true, t0)
	}
	o.mu.Lock()
	d, _ := o.dests.Get("api")
	n := len(d.tenants)
	o.mu.Unlock()
	if n > maxOverloadTenants {
		t.Errorf("%d tenants' windows kept, cap %d", n, maxOverloadTenants)
	}
}
