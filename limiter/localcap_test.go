package limiter

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestLocalRefusesBoundariesPastCap: with the default cap, a caller that
// picks a new boundary per request (a webhook host, say) fills Local to
// 10,000 entries and no further: the next new boundary is refused with
// ErrTooManyBoundaries, while the boundaries already held still decide.
func TestLocalRefusesBoundariesPastCap(t *testing.T) {
	l := mustLocal(t, LocalConfig{Limits: []Limit{PerSecond(1)}}, nil)
	for i := range defaultMaxBoundaries {
		allowAt(t, l, Request{Boundary: fmt.Sprint("host", i)}, t0)
	}
	_, err := l.AllowAt(Request{Boundary: "one-more"}, t0)
	if !errors.Is(err, ErrTooManyBoundaries) {
		t.Fatalf("new boundary past the cap: %v, want ErrTooManyBoundaries", err)
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
// its limit); once they are idle, a new boundary takes their place.
func TestLocalKeepsLiveStateAtCap(t *testing.T) {
	clk := newFakeClock(t0)
	l := mustLocal(t, LocalConfig{Limits: []Limit{PerMinute(1)}, MaxBoundaries: 2, IdleAfter: time.Second}, clk.Now)
	ctx := context.Background()
	allowAt(t, l, Request{Boundary: "drained"}, t0)
	if err := l.Cooldown(ctx, "paused", t0.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(10 * time.Second) // unused for longer than IdleAfter, but live
	if _, err := l.Allow(ctx, Request{Boundary: "new"}); !errors.Is(err, ErrTooManyBoundaries) {
		t.Fatalf("new boundary at the cap: %v, want ErrTooManyBoundaries", err)
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
