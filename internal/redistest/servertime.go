package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// WaitServerTime returns once Redis's own clock, the one that judges
// leases and expiries in the scripts, has moved d past its reading when
// called; it fails t if that takes longer than readyTimeout. It polls a
// clock, so a test waiting out a lease needs no sleep as synchronisation.
func WaitServerTime(t testing.TB, client redis.UniversalClient, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	start, err := client.Time(ctx).Result()
	if err != nil {
		t.Fatalf("redistest: TIME: %v", err)
	}
	deadline := time.Now().Add(readyTimeout)
	for {
		now, err := client.Time(ctx).Result()
		if err != nil {
			t.Fatalf("redistest: TIME: %v", err)
		}
		if now.Sub(start) > d {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: redis TIME did not move %v in %v", d, readyTimeout)
		}
		time.Sleep(pollFirst) // polling a clock, not synchronising
	}
}
