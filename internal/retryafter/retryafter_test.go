package retryafter

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	date := time.Date(2026, 12, 2, 10, 0, 30, 0, time.UTC)
	tests := []struct {
		name  string
		value string
		want  time.Time
		ok    bool
	}{
		{"delta seconds", "120", now.Add(120 * time.Second), true},
		{"zero seconds", "0", now, true},
		{"surrounding space", "  7 ", now.Add(7 * time.Second), true},
		{"leading zeros", "007", now.Add(7 * time.Second), true},
		{"IMF-fixdate", "Wed, 02 Dec 2026 10:00:30 GMT", date, true},
		{"RFC 850", "Wednesday, 02-Dec-26 10:00:30 GMT", date, true},
		{"asctime", "Wed Dec  2 10:00:30 2026", date, true},
		{"date in the past", "Tue, 01 Dec 2026 10:00:00 GMT", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), true},
		{"empty", "", time.Time{}, false},
		{"negative", "-5", time.Time{}, false},
		{"plus sign", "+5", time.Time{}, false},
		{"fraction", "1.5", time.Time{}, false},
		{"exponent", "1e3", time.Time{}, false},
		{"garbage", "soon", time.Time{}, false},
		{"overflow", "99999999999999999999999", time.Time{}, false},
		{"beyond a century", "3153600001", time.Time{}, false},
		{"two values", "5, 6", time.Time{}, false},
		{"date with wrong zone", "Wed, 02 Dec 2026 10:00:30 PST", time.Time{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Parse(tt.value, now)
			if ok != tt.ok || !got.Equal(tt.want) {
				t.Fatalf("Parse(%q) = %v, %v; want %v, %v", tt.value, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"120", "0", "-1", "1.5", "Wed, 02 Dec 2026 10:00:30 GMT",
		"Wednesday, 02-Dec-26 10:00:30 GMT", "Wed Dec  2 10:00:30 2026", "", "9999999999999999999"} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		at, ok := Parse(v, now)
		if !ok {
			if !at.IsZero() {
				t.Fatalf("Parse(%q) returned %v with ok=false", v, at)
			}
			return
		}
		if at.IsZero() {
			t.Fatalf("Parse(%q) returned the zero time with ok=true", v)
		}
		if isDigits(strings.TrimSpace(v)) && at.Before(now) {
			t.Fatalf("delta-seconds %q resolved to %v, before now", v, at)
		}
	})
}
