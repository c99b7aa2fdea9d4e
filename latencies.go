package retrybudget

import (
	"math"
	"math/bits"
	"sync"
	"time"
)

// Bounds of the hedging state, which a Transport keeps per destination.
const (
	// hedgeMinSamples is how many latencies a destination needs before
	// its percentile is trusted; until then it is not hedged.
	hedgeMinSamples = 32
	// hedgeDestinations caps the destinations a Transport tracks; the
	// least recently seen gives way to a new one.
	hedgeDestinations = 128
)

// hedging is a Transport's hedging policy and what it tracks of each
// destination: its recent latencies and whether its last attempt failed.
// Memory is bounded: hedgeDestinations × about 820 bytes.
type hedging struct {
	mu    sync.Mutex // guards dests and tick
	dests map[string]*destLatency
	tick  uint64 // counts updates, to find the least recently seen

	delay      time.Duration // the fixed delay, or the floor under the percentile
	percentile float64       // in (0, 100); 0 without one
	writes     bool          // PUT and DELETE are hedged too
}

// newHedging returns the hedging policy of a Config's HedgeDelay,
// HedgePercentile and HedgeWrites; nil when hedging is off.
func newHedging(delay time.Duration, percentile float64, writes bool) *hedging {
	if !(percentile > 0 && percentile < 100) {
		percentile = 0
	}
	if delay <= 0 && percentile == 0 {
		return nil
	}
	return &hedging{dests: map[string]*destLatency{}, delay: max(delay, 0), percentile: percentile,
		writes: writes}
}

// delayFor returns the hedge delay for a call to dest, and false when the
// call is not to be hedged: the destination's last attempt failed, none is
// known, or its percentile is asked for and not yet known.
func (h *hedging) delayFor(dest string) (time.Duration, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.dests[dest]
	switch {
	case e == nil || e.failed:
		// Only a destination whose last attempt got an answer is hedged:
		// not one failing, nor one not heard from, which may be down.
		return 0, false
	case h.percentile == 0:
		return h.delay, true
	case e.total < hedgeMinSamples:
		return 0, false
	}
	return max(e.quantile(h.percentile), h.delay), true
}

// failing reports whether the last attempt to dest failed.
func (h *hedging) failing(dest string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.dests[dest]
	return e != nil && e.failed
}

// observe records how an attempt to dest of class cls ended: an answer
// (a success or a rejection) clears the failure mark and, when timed, adds
// its latency took; any failure class sets the mark.
func (h *hedging) observe(dest string, cls Class, took time.Duration, timed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.entry(dest)
	switch cls {
	case ClassSuccess, ClassBusiness:
		e.failed = false
		if timed && h.percentile > 0 {
			e.add(took)
		}
	default:
		e.failed = true
	}
}

// censored adds the latency of a first attempt cancelled after took: it
// would have taken at least that long.
func (h *hedging) censored(dest string, took time.Duration) {
	if h.percentile == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.entry(dest).add(took)
}

// entry returns dest's state, making room for it when it is new. It
// requires that h.mu is held.
func (h *hedging) entry(dest string) *destLatency {
	h.tick++
	e := h.dests[dest]
	if e == nil {
		if len(h.dests) >= hedgeDestinations {
			var oldest string
			var seen uint64
			for d, x := range h.dests {
				if oldest == "" || x.seen < seen {
					oldest, seen = d, x.seen
				}
			}
			delete(h.dests, oldest)
		}
		e = &destLatency{}
		h.dests[dest] = e
	}
	e.seen = h.tick
	return e
}

// The latencies hedging tracks of one destination (see hedge.go): a
// histogram of fixed size whose old counts fade, and the percentile read
// from it.

// The latency histogram: 16 buckets per doubling (each at most 1/16 of its
// lower bound wide) from 16µs to 2^27µs (about 134 s), and one bucket per
// microsecond below 16µs; longer latencies fall in the last bucket.
const (
	// hedgeWindow is the most latencies a destination's histogram holds:
	// reaching it halves every count, so old latencies fade and every
	// count fits in 16 bits.
	hedgeWindow = 1024

	subBucketBits  = 4
	subBuckets     = 1 << subBucketBits
	maxLatencyExp  = 27
	latencyBuckets = (maxLatencyExp - subBucketBits + 2) * subBuckets
)

// destLatency is what hedging tracks of one destination.
type destLatency struct {
	counts [latencyBuckets]uint16
	total  int    // the sum of counts
	failed bool   // the last attempt failed (any failure class)
	seen   uint64 // hedging.tick when last updated
}

// add counts one latency, halving every count when the window is full.
func (e *destLatency) add(d time.Duration) {
	e.counts[latencyBucket(d)]++
	e.total++
	if e.total < hedgeWindow {
		return
	}
	e.total = 0
	for i := range e.counts {
		e.counts[i] /= 2
		e.total += int(e.counts[i])
	}
}

// quantile returns the latency below which p percent of the counted ones
// lie, interpolated within its bucket, less two standard deviations of
// the sampling error on the count above it. Without that margin, a
// destination whose latencies fall in two groups, the slower one about
// 100−p percent of them (the very case hedging is for), has its estimate
// jump between the groups with each new latency, and the hedge often
// waits for a slow answer's time. With it, the estimate stays
// on the top of the fast group, at the cost, for latencies spread evenly,
// of a percentile a little lower than asked (p93.6 for p95 over 1,000
// latencies).
func (e *destLatency) quantile(p float64) time.Duration {
	above := (1 - p/100) * float64(e.total)
	rank := max(float64(e.total)-above-2*math.Sqrt(above), 0)
	var below float64
	for i, n := range e.counts {
		if n == 0 {
			continue
		}
		if below+float64(n) >= rank {
			lo, width := bucketBounds(i)
			return lo + time.Duration((rank-below)/float64(n)*float64(width))
		}
		below += float64(n)
	}
	lo, width := bucketBounds(latencyBuckets - 1)
	return lo + width
}

// latencyBucket returns the histogram bucket of latency d.
func latencyBucket(d time.Duration) int {
	v := uint64(max(d/time.Microsecond, 0))
	if v < subBuckets {
		return int(v)
	}
	e := bits.Len64(v) - 1 // v is in [2^e, 2^(e+1))
	if e > maxLatencyExp {
		return latencyBuckets - 1
	}
	sub := int(v>>(e-subBucketBits)) & (subBuckets - 1)
	return (e-subBucketBits+1)*subBuckets + sub
}

// bucketBounds returns the lower bound and the width of bucket i.
func bucketBounds(i int) (lo, width time.Duration) {
	group, sub := i/subBuckets, i%subBuckets
	if group == 0 {
		return time.Duration(sub) * time.Microsecond, time.Microsecond
	}
	shift := group - 1 // e − subBucketBits
	return time.Duration(uint64(subBuckets+sub)<<shift) * time.Microsecond, time.Duration(uint64(1)<<shift) * time.Microsecond
}
