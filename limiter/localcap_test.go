package limiter

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestLocalHoldsNoBoundariesPastCap: with the default cap, a caller that
// picks a new boundary per request (a webhook host, say) fills Local to
// 10,000 entries and no further: the next new boundary gets no entry of its
// own (it is decided by the overflow), its cooldown is refused with
// ErrTooManyBoundaries, and the boundaries already held still decide.
func TestLocalHoldsNoBoundariesPastCap(t *testing.T) {
	l := mustLocal(t, LocalConfig{Limits: []Limit{PerSecond(1)}}, nil)
	for i := range defaultMaxBoundaries {
		allowAt(t, l, Request{Boundary: fmt.Sprint("host", i)}, t0)
	}
	if d, err := l.AllowAt(Request{Boundary: "one-more"}, t0); err != nil || !d.Allowed {
		t.Fatalf("new boundary past the cap: %+v, %v, want allowed by the overflow", d, err)
	}
	if err := l.Cooldown(context.Background(), "one-more", t0.Add(time.Second)); !errors.Is(err, ErrTooManyBoundaries) {
		t.Fatalf("cooldown of a new boundary past the cap: %v, want ErrTooManyBoundaries", err)
	}
	if n := l.len(); n != defaultMaxBoundaries {
		t.Fatalf("%d entries, want %d", n, defaultMaxBoundaries)
	}
	if d := allowAt(t, l, Request{Boundary: "host7"}, t0); d.Allowed || d.Reason != ReasonRate {
		t.Fatalf("a held boundary: %+v, want refused by its rate", d)
	}
}

// TestLocalKeepsLiveStateAtCap: at the cap, an entry with drained buckets
// or a cooldown pending is never dropped to make room (that would reset
// its limit), and a new boundary shares the overflow; once they are idle,
// a new boundary takes their place.
func TestLocalKeepsLiveStateAtCap(t *testing.T) {
	clk := newFakeClock(t0)
	l := mustLocal(t, LocalConfig{Limits: []Limit{PerMinute(1)}, MaxBoundaries: 2, IdleAfter: time.Second}, clk.Now)
	ctx := context.Background()
	allowAt(t, l, Request{Boundary: "drained"}, t0)
	if err := l.Cooldown(ctx, "paused", t0.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(10 * time.Second) // unused for longer than IdleAfter, but live
	if d, err := l.Allow(ctx, Request{Boundary: "new"}); err != nil || !d.Allowed || l.len() != 2 {
		t.Fatalf("new boundary at the cap: %+v, %v, %d entries, want allowed by the overflow, 2 entries", d, err, l.len())
	}
	if d, _ := l.Allow(ctx, Request{Boundary: "drained"}); d.Allowed {
		t.Fatal("the drained boundary was reset to a full bucket")
	}
	if d, _ := l.Allow(ctx, Request{Boundary: "paused"}); d.Reason != ReasonCooldown {
		t.Fatalf("the paused boundary: %+v, want its cooldown", d)
	}
	// A minute on, both refilled and the pause is over: room again.
	clk.Advance(2 * time.Minute)
	if d, err := l.Allow(ctx, Request{Boundary: "new"}); err != nil || !d.Allowed {
		t.Fatalf("new boundary once the others are idle: %+v, %v", d, err)
	}
}

// TestLocalForgetsIdleStateAsItGoes: idle entries go a few per decision,
// with no decision scanning them all.
func TestLocalForgetsIdleStateAsItGoes(t *testing.T) {
	l := mustLocal(t, LocalConfig{Limits: []Limit{PerSecond(100)}, IdleAfter: time.Second}, nil)
	const idle = 1000
	for i := range idle {
		allowAt(t, l, Request{Boundary: fmt.Sprint("host", i)}, t0)
	}
	for i := range idle / sweepPerDecision {
		allowAt(t, l, Request{Boundary: "busy"}, t0.Add(time.Minute+time.Duration(i)*time.Millisecond))
	}
	if n := l.len(); n != 1 {
		t.Fatalf("%d entries left, want only the busy boundary", n)
	}
}

// Past the cap, with every entry live (each of a flood of hosts has used
// a token of a 100/day limit, and none refills for 15 minutes), a new
// boundary is neither refused nor given a bucket of its own: it shares the
// overflow bucket, one boundary's limits, with every other newcomer past
// the cap. The flood's entries keep their state: none is evicted.
func TestLocalAdmitsNewcomersPastCapThroughTheOverflow(t *testing.T) {
	clk := newFakeClock(t0)
	l := mustLocal(t, LocalConfig{Limits: []Limit{{Rate: 100, Period: 24 * time.Hour, Burst: 2}}, MaxBoundaries: 100}, clk.Now)
	ctx := context.Background()
	for i := range 100 {
		if d, err := l.Allow(ctx, Request{Boundary: fmt.Sprint("flood", i)}); err != nil || !d.Allowed {
			t.Fatalf("flood host %d: %+v, %v", i, d, err)
		}
	}
	if d, err := l.Allow(ctx, Request{Boundary: "flood0"}); err != nil || !d.Allowed {
		t.Fatalf("flood0's second request: %+v, %v, want allowed (burst 2)", d, err)
	}
	clk.Advance(time.Minute)
	d, err := l.Allow(ctx, Request{Boundary: "victim-webhook"})
	if err != nil || !d.Allowed {
		t.Fatalf("a new boundary past the cap: %+v, %v, want allowed through the overflow", d, err)
	}
	// The overflow bucket is one boundary's: newcomers past the cap share
	// its burst of 2, whoever they are.
	if d, err := l.Allow(ctx, Request{Boundary: "another-newcomer"}); err != nil || !d.Allowed {
		t.Fatalf("a second newcomer: %+v, %v, want allowed (the overflow's burst is 2)", d, err)
	}
	if d, err := l.Allow(ctx, Request{Boundary: "a-third-newcomer"}); err != nil || d.Allowed || d.Reason != ReasonRate {
		t.Fatalf("a third newcomer: %+v, %v, want refused by the overflow bucket's rate", d, err)
	}
	// The flood's drained entry was not evicted to make room.
	if d, err := l.Allow(ctx, Request{Boundary: "flood0"}); err != nil || d.Allowed {
		t.Fatalf("flood0 after the newcomers: %+v, %v, want still drained", d, err)
	}
	if n := l.len(); n != 100 {
		t.Fatalf("%d entries, want the cap, 100", n)
	}
}
