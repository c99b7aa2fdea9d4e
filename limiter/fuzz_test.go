package limiter

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzBoundaryHidesCredential: whatever the credential, the boundary key
// never contains it, and different credentials get different keys.
func FuzzBoundaryHidesCredential(f *testing.F) {
	f.Add("Bearer sk_live_51H8", "Bearer sk_live_51H9")
	f.Add("Basic dXNlcjpwYXNz", "")
	f.Add("k", "k ")
	f.Fuzz(func(t *testing.T, cred, other string) {
		if len(cred) < 8 || strings.ContainsAny(cred, "\r\n\x00") {
			t.Skip("too short to be a credential, or not a valid header value")
		}
		req, _ := http.NewRequest("GET", "https://api.example.com/", nil)
		req.Header.Set("X-Api-Key", cred)
		key := ByHeader("x-api-key")(req)
		if strings.Contains(key, strings.TrimSpace(cred)) && len(strings.TrimSpace(cred)) >= 8 {
			t.Fatalf("key %q contains the credential %q", key, cred)
		}
		if !strings.HasPrefix(key, "api.example.com#") {
			t.Fatalf("key %q does not start with the host", key)
		}
		if other != cred {
			req2, _ := http.NewRequest("GET", "https://api.example.com/", nil)
			req2.Header["X-Api-Key"] = []string{other}
			if ByHeader("X-Api-Key")(req2) == key {
				t.Fatalf("credentials %q and %q share a boundary", cred, other)
			}
		}
	})
}

// FuzzLimitSpec: rounding to whole microseconds only ever makes a limit
// stricter, and a valid limit always yields a usable spec.
func FuzzLimitSpec(f *testing.F) {
	f.Add(100, int64(time.Second), 10, 1.0)
	f.Add(3, int64(time.Second), 0, 0.5)
	f.Add(10_000, int64(time.Hour), 500, 0.25)
	f.Fuzz(func(t *testing.T, rate int, period int64, burst int, share float64) {
		l := Limit{Rate: rate, Period: time.Duration(period), Burst: burst}
		if l.validate() != nil || !validShare(share) {
			return
		}
		s := l.scaled(share)
		if s.interval < 1 || s.burst < 1 {
			t.Fatalf("%v at share %v: spec %+v", l, share, s)
		}
		// interval >= period/(rate*share), i.e. never faster than asked,
		// allowing for float error in the product.
		asked := float64(l.period().Microseconds()) / (float64(l.Rate) * share)
		if float64(s.interval) < asked*(1-1e-12) {
			t.Fatalf("%v at share %v: interval %dus, faster than %.3fus", l, share, s.interval, asked)
		}
		if s.burst > int64(l.burst()) {
			t.Fatalf("%v at share %v: burst %d above %d", l, share, s.burst, l.burst())
		}
	})
}

// FuzzParseBatch: whatever queue.lua's reply looks like, parseBatch
// returns results within range or an error, never a panic.
func FuzzParseBatch(f *testing.F) {
	f.Add(int64(1), int64(1), int64(0), int64(0), int64(0), int64(0), 1)
	f.Add(int64(0), int64(0), int64(-5), int64(3), int64(9), int64(1), 2)
	f.Fuzz(func(t *testing.T, now, granted, wait, retry, reason, depth int64, n int) {
		reply := []any{now, granted, wait, retry, reason, depth}
		outs, err := parseBatch(reply, n)
		if err != nil {
			return
		}
		if n != 1 || len(outs) != 1 {
			t.Fatalf("n=%d parsed %d results from one", n, len(outs))
		}
		o := outs[0]
		if o.wait < 0 || o.retry < 0 || o.depth < 0 || o.reason < 0 || o.reason > reasonScopeCooldown {
			t.Fatalf("out of range: %+v", o)
		}
	})
}
