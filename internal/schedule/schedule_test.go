package schedule

import (
	"testing"
	"time"
)

func TestWithDefaults(t *testing.T) {
	got := Schedule{}.WithDefaults()
	want := Schedule{MaxAttempts: DefaultMaxAttempts, BaseDelay: DefaultBaseDelay, MaxDelay: DefaultMaxDelay,
		Jitter: DefaultJitter, MaxWait: DefaultMaxWait}
	if got != want {
		t.Fatalf("Schedule{}.WithDefaults() = %+v; want %+v", got, want)
	}
	clamped := Schedule{MaxAttempts: -3, Jitter: 7, Deadline: -time.Second}.WithDefaults()
	if clamped.MaxAttempts != 1 || clamped.Jitter != 1 || clamped.Deadline != 0 {
		t.Fatalf("clamps: %+v", clamped)
	}
	if (Schedule{Jitter: -1}).WithDefaults().Jitter != 0 {
		t.Fatal("a negative Jitter must mean none")
	}
}

func TestWait(t *testing.T) {
	s := Schedule{Jitter: -1}.WithDefaults() // no spread: exact waits
	now := time.Unix(1_000_000, 0)
	tests := []struct {
		name              string
		backoff           time.Duration
		retryAt, deadline time.Time
		wantDelay         time.Duration
		wantStop          Stop
	}{
		{"backoff", time.Second, time.Time{}, time.Time{}, time.Second, Go},
		{"capped at MaxDelay", time.Hour, time.Time{}, time.Time{}, DefaultMaxDelay, Go},
		{"raised to Retry-After", time.Second, now.Add(5 * time.Second), time.Time{}, 5 * time.Second, Go},
		{"Retry-After beyond MaxWait", time.Second, now.Add(2 * DefaultMaxWait), time.Time{}, time.Second, TooLong},
		{"ends at the deadline", time.Second, time.Time{}, now.Add(time.Second), time.Second, PastDeadline},
	}
	for _, tt := range tests {
		w := s.Wait(tt.backoff, now, tt.retryAt, tt.deadline)
		if w.Delay != tt.wantDelay || w.Stop != tt.wantStop {
			t.Errorf("%s: %+v; want delay %v, stop %v", tt.name, w, tt.wantDelay, tt.wantStop)
		}
	}
}
