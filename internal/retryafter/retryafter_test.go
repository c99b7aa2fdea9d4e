package retryafter

import (
	"net/http"
	"strconv"
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

// TestRetryAfterFarFutureDateRefused pins that an HTTP-date gets the same
// century bound as delta-seconds, at the same place: unbounded, "Fri, 31
// Dec 9999 23:59:59 GMT" becomes Outcome.RetryAt and a job queue
// rescheduling there parks the job for ever.
func TestRetryAfterFarFutureDateRefused(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	edge := now.Add(Max).Truncate(time.Second)
	for _, tt := range []struct {
		value string
		ok    bool
	}{
		{"Fri, 31 Dec 9999 23:59:59 GMT", false},
		{"Fri Dec 31 23:59:59 9999", false},
		{edge.Add(time.Second).Format(http.TimeFormat), false},
		{edge.Format(http.TimeFormat), true},
		{strconv.FormatInt(int64(Max/time.Second)+1, 10), false},
		{strconv.FormatInt(int64(Max/time.Second), 10), true},
		{"Thu, 01 Jan 1970 00:00:00 GMT", true}, // the past is valid: retry now
	} {
		if _, ok := Parse(tt.value, now); ok != tt.ok {
			t.Errorf("Parse(%q) ok = %t, want %t", tt.value, ok, tt.ok)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"120", "0", "-1", "1.5", "Wed, 02 Dec 2026 10:00:30 GMT",
		"Wednesday, 02-Dec-26 10:00:30 GMT", "Wed Dec  2 10:00:30 2026", "", "9999999999999999999",
		"Fri, 31 Dec 9999 23:59:59 GMT", "Friday, 31-Dec-99 23:59:59 GMT", "Fri Dec 31 23:59:59 9999"} {
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
		if at.Sub(now) > Max {
			t.Fatalf("Parse(%q) = %v, more than a century ahead", v, at)
		}
	})
}
