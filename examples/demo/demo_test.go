package main

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestRun runs the demo end to end on loopback: a small load against the
// flaky provider must apply no charge twice and account for every action.
func TestRun(t *testing.T) {
	before := runtime.NumGoroutine()
	const n = 60
	s, err := run(context.Background(), options{n: n, workers: 8, seed: 1, timeout: 10 * time.Second, budget: 0.5})
	if err != nil {
		t.Fatal(err)
	}

	if s.duplicates != 0 {
		t.Errorf("duplicate effects = %d, want 0", s.duplicates)
	}
	if got := s.succeeded + s.rejected + len(s.gaveUp); got != n || len(s.unaccounted) != 0 {
		t.Errorf("succeeded %d + rejected %d + gave up %d = %d, unaccounted %d; want %d, 0",
			s.succeeded, s.rejected, len(s.gaveUp), got, len(s.unaccounted), n)
	}
	if !s.ok() {
		t.Error("ok() = false")
	}
	if sumValues(s.retries) == 0 {
		t.Error("no retry happened")
	}
	if s.applied < s.succeeded {
		t.Errorf("effects applied %d < succeeded %d", s.applied, s.succeeded)
	}
	retryAt := false
	for _, r := range s.gaveUp {
		retryAt = retryAt || !r.outcome.RetryAt.IsZero()
	}
	if !retryAt {
		t.Errorf("no give-up with a retry-at among %d give-ups", len(s.gaveUp))
	}

	var out bytes.Buffer
	if err := s.write(&out, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"duplicate effects", "GIVE-UP", "RETRY AT"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}

	// The server, the client's connections and the progress printer must
	// all be gone; connection goroutines take a moment to notice.
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if now := runtime.NumGoroutine(); now > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines left running:\n%s", now-before, buf[:runtime.Stack(buf, true)])
	}
}
