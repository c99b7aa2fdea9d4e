package rateheader

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

func TestXRateLimitParse(t *testing.T) {
	epoch := now.Add(30 * time.Minute).Unix()
	at := func(d time.Duration) time.Time { return now.Add(d) }
	tests := []struct {
		name  string
		x     XRateLimit
		h     http.Header
		ok    bool
		want  Quota
		reset time.Time
	}{
		{"github epoch", XRateLimit{Mode: ResetEpoch},
			header("X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", itoa64(epoch)),
			true, Quota{Limit: 5000, Remaining: 0}, time.Unix(epoch, 0)},
		{"lower-case names", XRateLimit{Mode: ResetEpoch},
			http.Header{"X-Ratelimit-Remaining": {"4999"}, "X-Ratelimit-Reset": {itoa64(epoch)}},
			true, Quota{Remaining: 4999}, time.Unix(epoch, 0)},
		{"epoch with fraction", XRateLimit{Mode: ResetEpoch},
			header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", itoa64(epoch)+".5"),
			true, Quota{}, time.Unix(epoch, 5e8)},
		{"epoch in the past kept", XRateLimit{Mode: ResetEpoch},
			header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1000"),
			true, Quota{}, time.Unix(1000, 0)},
		{"epoch beyond a day ignored", XRateLimit{Mode: ResetEpoch},
			header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", itoa64(now.Add(25*time.Hour).Unix())),
			true, Quota{}, time.Time{}},
		{"epoch in milliseconds ignored", XRateLimit{Mode: ResetEpoch},
			header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", itoa64(epoch*1000)),
			true, Quota{}, time.Time{}},
		{"delta", XRateLimit{Mode: ResetDelta},
			header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "30"),
			true, Quota{}, at(30 * time.Second)},
		{"delta with fraction", XRateLimit{Mode: ResetDelta},
			header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1.25"),
			true, Quota{}, at(1250 * time.Millisecond)},
		{"delta mode refuses an epoch", XRateLimit{Mode: ResetDelta},
			header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", itoa64(epoch)),
			true, Quota{}, time.Time{}},
		{"duration", XRateLimit{Suffix: "-Requests", Mode: ResetDuration},
			header("X-RateLimit-Limit-Requests", "5000", "X-RateLimit-Remaining-Requests", "0", "X-RateLimit-Reset-Requests", "6m0s"),
			true, Quota{Limit: 5000}, at(6 * time.Minute)},
		{"duration in ms", XRateLimit{Suffix: "-Tokens", Mode: ResetDuration},
			header("X-RateLimit-Remaining-Tokens", "0", "X-RateLimit-Reset-Tokens", "20ms"),
			true, Quota{}, at(20 * time.Millisecond)},
		{"negative duration", XRateLimit{Mode: ResetDuration},
			header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "-1s"),
			true, Quota{}, time.Time{}},
		{"duration beyond a day", XRateLimit{Mode: ResetDuration},
			header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "25h"),
			true, Quota{}, time.Time{}},
		{"auto: delta", XRateLimit{},
			header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "60"),
			true, Quota{}, at(time.Minute)},
		{"auto: epoch", XRateLimit{},
			header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", itoa64(epoch)),
			true, Quota{}, time.Unix(epoch, 0)},
		{"auto: duration", XRateLimit{},
			header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1m30s"),
			true, Quota{}, at(90 * time.Second)},
		{"auto: garbage", XRateLimit{},
			header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "Tue Feb 16 2021"),
			true, Quota{}, time.Time{}},
		{"custom prefix", XRateLimit{Prefix: "X-Rate-Limit-"},
			header("X-Rate-Limit-Remaining", "7"),
			true, Quota{Remaining: 7}, time.Time{}},
		{"no remaining", XRateLimit{}, header("X-RateLimit-Reset", "30"), false, Quota{}, time.Time{}},
		{"negative remaining (Azure's unknown)", XRateLimit{}, header("X-RateLimit-Remaining", "-1"), false, Quota{}, time.Time{}},
		{"decimal remaining", XRateLimit{}, header("X-RateLimit-Remaining", "1.0"), false, Quota{}, time.Time{}},
		{"16-digit remaining", XRateLimit{}, header("X-RateLimit-Remaining", "1000000000000000"), false, Quota{}, time.Time{}},
		{"bad limit left zero", XRateLimit{}, header("X-RateLimit-Remaining", "3", "X-RateLimit-Limit", "x"),
			true, Quota{Remaining: 3}, time.Time{}},
		{"spaces trimmed", XRateLimit{}, header("X-RateLimit-Remaining", " 3 "), true, Quota{Remaining: 3}, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, ok := tt.x.Parse(tt.h, now)
			if ok != tt.ok {
				t.Fatalf("ok = %v; want %v (%+v)", ok, tt.ok, q)
			}
			if q.Remaining != tt.want.Remaining || q.Limit != tt.want.Limit || !q.Reset.Equal(tt.reset) {
				t.Fatalf("Parse = %+v; want remaining %d, limit %d, reset %v", q, tt.want.Remaining, tt.want.Limit, tt.reset)
			}
		})
	}
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// FuzzXRateLimit checks that no field values make Parse panic or return
// a quota out of its bounds, in any mode.
func FuzzXRateLimit(f *testing.F) {
	for _, seed := range [][3]string{
		{"0", "5000", "1796209230"},
		{"4999", "", "30"},
		{"0", "x", "6m0s"},
		{"-1", "-1", "-1s"},
		{"999999999999999", "1", "1.5"},
		{"0", "", "9223372036.854775807"},
		{"0", "", "1e9"},
		{"0", "", "2562047h47m16.854775807s"},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, remaining, limit, reset string) {
		h := header("X-RateLimit-Remaining", remaining, "X-RateLimit-Limit", limit, "X-RateLimit-Reset", reset)
		for _, m := range []ResetMode{ResetAuto, ResetDelta, ResetEpoch, ResetDuration} {
			q, ok := XRateLimit{Mode: m}.Parse(h, now)
			if !ok {
				continue
			}
			if q.Remaining < 0 || q.Remaining > maxCount || q.Limit < 0 || q.Limit > maxCount {
				t.Fatalf("mode %d: counts out of bounds: %+v", m, q)
			}
			if !q.Reset.IsZero() && q.Reset.After(now.Add(MaxReset)) {
				t.Fatalf("mode %d: reset beyond MaxReset: %+v", m, q)
			}
			if m != ResetEpoch && m != ResetAuto && !q.Reset.IsZero() && q.Reset.Before(now) {
				t.Fatalf("mode %d: a relative reset before now: %+v", m, q)
			}
		}
	})
}
