package budget

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// withdrawAtN withdraws n times at now and returns how many were allowed.
func withdrawAtN(b *Local, dest string, now time.Time, n int) int {
	allowed := 0
	for range n {
		if b.withdrawAt(dest, now).Allowed {
			allowed++
		}
	}
	return allowed
}

func TestLocalPercentPlusFloor(t *testing.T) {
	b := NewLocal(Config{})
	for range 100 {
		b.depositAt("api", t0)
	}
	// 10% of 100 first attempts, plus the floor's one second of 10 tokens.
	if got := withdrawAtN(b, "api", t0, 50); got != 20 {
		t.Fatalf("%d retries allowed; want 20 (10%% of 100 + floor of 10)", got)
	}
	d := b.withdrawAt("api", t0)
	if d.Allowed || d.Deposits != 100 || d.Retries != 20 || d.Ratio() != 0.2 {
		t.Fatalf("decision %+v ratio %v; want refused with 100 deposits, 20 retries, ratio 0.2", d, d.Ratio())
	}
}

func TestLocalFloorRefills(t *testing.T) {
	b := NewLocal(Config{Percent: -1, MinRetriesPerSec: 10})
	if got := withdrawAtN(b, "api", t0, 20); got != 10 {
		t.Fatalf("%d allowed with no traffic; want the floor's 10", got)
	}
	if got := withdrawAtN(b, "api", t0.Add(100*time.Millisecond), 5); got != 1 {
		t.Fatalf("%d allowed 100ms later; want 1 refilled token", got)
	}
	if got := withdrawAtN(b, "api", t0.Add(time.Hour), 50); got != 10 {
		t.Fatalf("%d allowed after an hour; want 10 (the floor holds one second)", got)
	}
}

func TestLocalCreditsExpire(t *testing.T) {
	b := NewLocal(Config{MinRetriesPerSec: -1, Window: 10 * time.Second})
	for range 100 {
		b.depositAt("api", t0)
	}
	if got := withdrawAtN(b, "api", t0.Add(5*time.Second), 5); got != 5 {
		t.Fatalf("%d allowed inside the window; want 5", got)
	}
	// 11 s later the deposits have left the window, the retries too.
	d := b.withdrawAt("api", t0.Add(11*time.Second))
	if d.Allowed || d.Deposits != 0 {
		t.Fatalf("decision %+v after the window; want refused with no deposits", d)
	}
}

func TestLocalIsPerDestination(t *testing.T) {
	b := NewLocal(Config{MinRetriesPerSec: -1})
	for range 10 {
		b.depositAt("a", t0)
	}
	if !b.withdrawAt("a", t0).Allowed || b.withdrawAt("b", t0).Allowed {
		t.Fatal("deposits to a must fund a's retries only")
	}
}

func TestLocalConcurrentWithdrawalsNeverOvershoot(t *testing.T) {
	b := NewLocal(Config{})
	for range 1000 {
		b.depositAt("api", t0)
	}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			allowed.Add(int64(withdrawAtN(b, "api", t0, 20)))
		}()
	}
	wg.Wait()
	if got := allowed.Load(); got != 110 {
		t.Fatalf("%d retries allowed across 50 goroutines; want exactly 110", got)
	}
}

func TestRule(t *testing.T) {
	tests := []struct {
		in   Config
		want Rule
	}{
		{Config{}, Rule{Percent: 0.1, MinRetriesPerSec: 10, Window: 10 * time.Second}},
		{Config{Percent: -1, MinRetriesPerSec: -1, Window: -1}, Rule{Percent: 0, MinRetriesPerSec: 0, Window: 10 * time.Second}},
		{Config{Percent: 2, MinRetriesPerSec: 3, Window: time.Second}, Rule{Percent: 1, MinRetriesPerSec: 3, Window: time.Second}},
	}
	for _, tt := range tests {
		if got := tt.in.Rule(); got != tt.want {
			t.Errorf("%+v.Rule() = %+v; want %+v", tt.in, got, tt.want)
		}
	}
}
