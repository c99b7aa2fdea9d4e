package limiter

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestLeases(t *testing.T) {
	l := newLeases(100 * time.Millisecond)
	a := leaseKey{boundary: "a"}
	if l.take(a, t0) {
		t.Fatal("took a token never leased")
	}
	l.put(a, 2, t0)
	// A second lease merges, and keeps the first one's expiry so no token
	// outlives its TTL.
	l.put(a, 1, t0.Add(50*time.Millisecond))
	for i := 0; i < 3; i++ {
		if !l.take(a, t0.Add(60*time.Millisecond)) {
			t.Fatalf("token %d missing", i)
		}
	}
	if l.take(a, t0.Add(60*time.Millisecond)) {
		t.Fatal("took a 4th token of 3")
	}
	l.put(a, 5, t0)
	if l.take(a, t0.Add(100*time.Millisecond)) {
		t.Fatal("took a token at its expiry")
	}
	l.put(a, 5, t0)
	l.put(leaseKey{boundary: "a", owner: "x"}, 5, t0)
	l.put(leaseKey{boundary: "b"}, 5, t0)
	l.drop("a")
	if l.take(a, t0) || l.take(leaseKey{boundary: "a", owner: "x"}, t0) {
		t.Fatal("drop left a lease of the boundary")
	}
	if !l.take(leaseKey{boundary: "b"}, t0) {
		t.Fatal("drop took another boundary's lease")
	}
	l.put(leaseKey{boundary: "c"}, 0, t0) // nothing to store
	// Expired leases are swept when new ones are stored.
	l.put(leaseKey{boundary: "d"}, 1, t0.Add(time.Hour))
	if n := len(l.m); n != 1 {
		t.Fatalf("%d leases after the sweep, want 1", n)
	}
}

func TestPauses(t *testing.T) {
	var p pauses
	if !p.until("a", t0).IsZero() {
		t.Fatal("paused before any cooldown")
	}
	end := t0.Add(time.Second)
	if got := p.extend("a", end, t0); !got.Equal(end) {
		t.Fatalf("extend = %v, want %v", got, end)
	}
	if got := p.extend("a", t0.Add(time.Millisecond), t0); !got.Equal(end) {
		t.Fatalf("a shorter pause shortened it: %v", got)
	}
	if got := p.until("a", t0.Add(999*time.Millisecond)); !got.Equal(end) {
		t.Fatalf("until = %v, want %v", got, end)
	}
	if !p.until("b", t0).IsZero() {
		t.Fatal("another boundary paused")
	}
	if !p.until("a", end).IsZero() {
		t.Fatal("still paused at the end of the pause")
	}
	if p.n.Load() != 0 {
		t.Fatalf("%d pauses remembered after the last ended", p.n.Load())
	}
}

func TestParseDecision(t *testing.T) {
	granted, wait, reason, err := parseDecision([]any{int64(0), int64(1500), int64(reasonOwner)})
	if err != nil || granted != 0 || wait != 1500*time.Microsecond || reason != reasonOwner {
		t.Fatalf("got %v %v %v %v", granted, wait, reason, err)
	}
	for _, bad := range []any{nil, "x", []any{int64(1)}, []any{int64(1), "2", int64(3)}} {
		if _, _, _, err := parseDecision(bad); !errors.Is(err, errReply) {
			t.Errorf("parseDecision(%v) = %v, want errReply", bad, err)
		}
	}
}

// FuzzParseDecision: whatever the script or a mismatched server replies,
// parseDecision returns an error or a decision with a wait that is not
// negative, and never panics.
func FuzzParseDecision(f *testing.F) {
	f.Add(int64(1), int64(0), int64(0), uint8(0))
	f.Add(int64(0), int64(1500), int64(reasonOwner), uint8(0))
	f.Add(int64(0), int64(-1), int64(0), uint8(1))
	f.Fuzz(func(t *testing.T, granted, wait, reason int64, shape uint8) {
		var v any
		switch shape % 4 {
		case 0:
			v = []any{granted, wait, reason}
		case 1:
			v = []any{granted, wait}
		case 2:
			v = []any{granted, "wait", reason}
		default:
			v = wait
		}
		_, d, _, err := parseDecision(v)
		if err == nil && d < 0 {
			t.Fatalf("parseDecision(%v) returned a negative wait %v", v, d)
		}
	})
}

// TestPausesBoundedAt100kBoundaries pins issue 16 finding 5 for the
// limiter: extend scanned every remembered pause on every cooldown, so
// cooldowns on many attacker-chosen hosts cost quadratic time. At 100k
// boundaries the map stays at its cap and each extend examines a bounded
// number of entries, counted, not timed.
func TestPausesBoundedAt100kBoundaries(t *testing.T) {
	var p pauses
	const n = 100_000
	for i := range n {
		now := t0.Add(time.Duration(i) * time.Millisecond)
		p.extend(fmt.Sprint("host-", i, ".example"), now.Add(time.Hour), now)
	}
	if got := p.m.Len(); got > maxPauses || p.n.Load() != int64(got) {
		t.Errorf("%d pauses remembered (n %d), want at most %d", got, p.n.Load(), maxPauses)
	}
	if v := p.m.Visited(); v > 2*n {
		t.Errorf("extend examined %d entries for %d calls, want at most 2 per call", v, n)
	}
	// The most recent pause is still honoured.
	last := fmt.Sprint("host-", n-1, ".example")
	if p.until(last, t0.Add(n*time.Millisecond)).IsZero() {
		t.Error("the newest pause was forgotten")
	}
}
