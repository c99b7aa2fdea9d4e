package rateheader

import (
	"strings"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/retryafter"
)

func TestParseRetryAfter(t *testing.T) {
	tests := []struct {
		value string
		want  time.Time
		ok    bool
	}{
		{"2.0", now.Add(2 * time.Second), true},
		{"0.5", now.Add(500 * time.Millisecond), true},
		{"120", now.Add(2 * time.Minute), true},
		{"Wed, 02 Dec 2026 10:05:00 GMT", now.Add(5 * time.Minute), true},
		{"-2.0", time.Time{}, false},
		{"2.", time.Time{}, false},
		{"2.0.0", time.Time{}, false},
		{"1e2", time.Time{}, false},
		{"", time.Time{}, false},
		{"soon", time.Time{}, false},
	}
	for _, tt := range tests {
		at, ok := ParseRetryAfter(header("Retry-After", tt.value), now)
		if ok != tt.ok || !at.Equal(tt.want) {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tt.value, at, ok, tt.want, tt.ok)
		}
	}
}

// FuzzRetryAfter checks that the decimal-tolerant parser never panics,
// agrees with retryafter.Parse on everything without a dot, and
// never returns a decimal wait that is negative.
func FuzzRetryAfter(f *testing.F) {
	for _, seed := range []string{"2.0", "120", "Wed, 02 Dec 2026 10:05:00 GMT", "-2.0", "3153600000.0", "3153600001.0", "0.0000000001", "."} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		h := header("Retry-After", v)
		at, ok := ParseRetryAfter(h, now)
		if !strings.Contains(h.Get("Retry-After"), ".") {
			want, wantOK := retryafter.Parse(h.Get("Retry-After"), now)
			if ok != wantOK || !at.Equal(want) {
				t.Fatalf("%q: %v, %v; retryafter.Parse says %v, %v", v, at, ok, want, wantOK)
			}
			return
		}
		if ok && (at.Before(now) || at.Sub(now) > retryafter.Max) {
			t.Fatalf("%q: decimal wait %v out of bounds", v, at.Sub(now))
		}
	})
}
