package retrybudget

import (
	"testing"
	"time"
)

// TestLatencyBuckets: every latency falls in the bucket whose bounds hold
// it, and a bucket is at most 1/16 of its lower bound wide.
func TestLatencyBuckets(t *testing.T) {
	for _, d := range []time.Duration{0, time.Microsecond, 15 * time.Microsecond, 16 * time.Microsecond,
		17 * time.Microsecond, time.Millisecond, 10 * time.Millisecond, 10240 * time.Microsecond, time.Second, 134 * time.Second} {
		i := latencyBucket(d)
		lo, width := bucketBounds(i)
		if d < lo || d >= lo+width {
			t.Errorf("%v: bucket %d is [%v, %v)", d, i, lo, lo+width)
		}
		if lo >= 16*time.Microsecond && width > lo/16 {
			t.Errorf("%v: bucket %d is %v wide from %v", d, i, width, lo)
		}
	}
	if i := latencyBucket(time.Hour); i != latencyBuckets-1 {
		t.Errorf("an hour falls in bucket %d; want the last, %d", i, latencyBuckets-1)
	}
}
