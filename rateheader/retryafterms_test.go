package rateheader

import (
	"testing"
	"time"
)

func TestParseRetryAfterMs(t *testing.T) {
	tests := []struct {
		value string
		want  time.Duration
		ok    bool
	}{
		{"250", 250 * time.Millisecond, true},
		{"0", 0, true},
		{" 1500 ", 1500 * time.Millisecond, true},
		{"1500.5", 1500*time.Millisecond + 500*time.Microsecond, true},
		{"0.000001", time.Nanosecond, true},
		{"0.0000001", 0, true}, // below a nanosecond
		{"86400000", MaxReset, true},
		{"86400001", 0, false},
		{"99999999999999999999999", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{"1e3", 0, false},
		{"1.", 0, false},
		{".5", 0, false},
		{"1.2.3", 0, false},
		{"", 0, false},
		{"soon", 0, false},
	}
	for _, tt := range tests {
		at, ok := ParseRetryAfterMs(header("Retry-After-Ms", tt.value), now)
		if ok != tt.ok || (ok && at.Sub(now) != tt.want) || (!ok && !at.IsZero()) {
			t.Errorf("ParseRetryAfterMs(%q) = now+%v, %v; want now+%v, %v", tt.value, at.Sub(now), ok, tt.want, tt.ok)
		}
	}
	if _, ok := ParseRetryAfterMs(header(), now); ok {
		t.Error("an absent field parsed")
	}
	if at, ok := ParseRetryAfterMs(header("retry-after-ms", "5"), now); !ok || at.Sub(now) != 5*time.Millisecond {
		t.Errorf("lower-case name: now+%v, %v; want now+5ms", at.Sub(now), ok)
	}
}

// FuzzRetryAfterMs checks that ParseRetryAfterMs never panics and only
// returns waits within [0, MaxReset].
func FuzzRetryAfterMs(f *testing.F) {
	for _, seed := range []string{"250", "0", "1500.5", "-1", "1e3", "86400001", "9223372036854775807", "0.99999999999", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		at, ok := ParseRetryAfterMs(header("Retry-After-Ms", v), now)
		if !ok {
			if !at.IsZero() {
				t.Fatalf("%q: not ok but a time %v", v, at)
			}
			return
		}
		if d := at.Sub(now); d < 0 || d > MaxReset {
			t.Fatalf("%q: wait %v out of [0, MaxReset]", v, d)
		}
	})
}
