package limiter

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestPrefetchedTokens(t *testing.T) {
	l := newPrefetched(100 * time.Millisecond)
	a := prefetchKey{boundary: "a"}
	if l.take(a, t0) {
		t.Fatal("took a token never prefetched")
	}
	l.put(a, 2, t0)
	// A second prefetch merges, and keeps the first one's expiry so no token
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
	l.put(prefetchKey{boundary: "a", owner: "x"}, 5, t0)
	l.put(prefetchKey{boundary: "b"}, 5, t0)
	l.drop("a")
	if l.take(a, t0) || l.take(prefetchKey{boundary: "a", owner: "x"}, t0) {
		t.Fatal("drop left a prefetch of the boundary")
	}
	if !l.take(prefetchKey{boundary: "b"}, t0) {
		t.Fatal("drop took another boundary's prefetch")
	}
	l.put(prefetchKey{boundary: "c"}, 0, t0) // nothing to store
	// Expired prefetched tokens are swept when new ones are stored.
	l.put(prefetchKey{boundary: "d"}, 1, t0.Add(time.Hour))
	if n := len(l.m); n != 1 {
		t.Fatalf("%d prefetches after the sweep, want 1", n)
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
	d, err := parseDecision([]any{int64(0), int64(1500), int64(reasonOwner), int64(-20), int64(1500)}, 1, 2)
	if err != nil || d.granted != 0 || d.wait != 1500*time.Microsecond || d.reason != reasonOwner || len(d.next) != 2 {
		t.Fatalf("got %+v %v", d, err)
	}
	// A deep bucket's next token may be due years ago.
	if _, err := parseDecision([]any{int64(0), int64(5), int64(1), int64(-maxWaitMicros * 3)}, 1, 1); err != nil {
		t.Fatalf("a next token due 3 years ago: %v", err)
	}
	if d, err := parseDecision([]any{int64(3)}, 3, 1); err != nil || d.granted != 3 {
		t.Fatalf("every request granted: got %+v %v", d, err)
	}
	for _, bad := range []any{nil, "x", []any{int64(0)}, []any{int64(2)}, []any{int64(1), "2", int64(3), int64(0)},
		[]any{int64(1), int64(0), int64(0), int64(0)}, // granted all, but the long form
		[]any{int64(9), int64(0), int64(0), int64(0)}, // more than asked
		[]any{int64(0), int64(1), int64(1)},           // one limit missing
		[]any{int64(-1), int64(0), int64(0), int64(0)},
		[]any{int64(0), int64(-5), int64(1), int64(0)},
		[]any{int64(0), int64(5), int64(1), int64(-maxNextMicros - 1)},
		[]any{int64(0), int64(5), int64(1), int64(maxWaitMicros + 1)},
	} {
		if _, err := parseDecision(bad, 1, 1); !errors.Is(err, errReply) {
			t.Errorf("parseDecision(%v) = %v, want errReply", bad, err)
		}
	}
}

// TestDecisionPlace: the j-th refused request of a count is placed j of
// the deciding limit's intervals after the first, and the limit that
// decides may change with j.
func TestDecisionPlace(t *testing.T) {
	limits := []limitArg{{interval: 100, reason: reasonRate}, {interval: 500, reason: reasonOwner}}
	d := decision{wait: 300 * time.Microsecond, reason: reasonRate, next: []any{int64(300), int64(-90)}}
	for j, want := range []struct {
		wait   time.Duration
		reason int64
	}{{300, reasonRate}, {410, reasonOwner}, {910, reasonOwner}} {
		w, r := d.place(j, limits)
		if w != want.wait*time.Microsecond || r != want.reason {
			t.Errorf("place(%d) = %v %d, want %v %d", j, w, r, want.wait*time.Microsecond, want.reason)
		}
	}
	cool := decision{wait: time.Second, reason: reasonCooldown, next: []any{int64(1e6), int64(1e6)}}
	if w, r := cool.place(5, limits); w != time.Second || r != reasonCooldown {
		t.Errorf("cooldown place(5) = %v %d, want the pause for every request", w, r)
	}
}

// FuzzParseDecision: whatever the script or a mismatched server replies,
// parseDecision returns an error or a decision whose waits are not
// negative, and never panics.
func FuzzParseDecision(f *testing.F) {
	f.Add(int64(1), int64(0), int64(0), uint8(0))
	f.Add(int64(0), int64(1500), int64(reasonOwner), uint8(0))
	f.Add(int64(0), int64(-1), int64(0), uint8(1))
	f.Fuzz(func(t *testing.T, granted, wait, reason int64, shape uint8) {
		var v any
		switch shape % 4 {
		case 0:
			v = []any{granted, wait, reason, wait - 7}
		case 1:
			v = []any{granted}
		case 2:
			v = []any{granted, "wait", reason, wait}
		default:
			v = wait
		}
		d, err := parseDecision(v, 3, 1)
		if err != nil {
			return
		}
		if d.wait < 0 || d.granted < 0 || d.granted > 3 {
			t.Fatalf("parseDecision(%v) returned a negative wait or grant: %+v", v, d)
		}
		if w, _ := d.place(3, []limitArg{{interval: 1000, reason: reasonRate}}); w < 0 {
			t.Fatalf("place of %+v is negative: %v", d, w)
		}
	})
}

// TestPausesBoundedAt100kBoundaries pins that a cooldown costs bounded
// work however many boundaries exist: an extend that scans every
// remembered pause makes cooldowns on many attacker-chosen hosts cost
// quadratic time. At 100k
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
