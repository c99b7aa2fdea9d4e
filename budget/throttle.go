package budget

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/retrybudget/retrybudget/internal/lru"
)

// Defaults of a ThrottleConfig's zero fields.
const (
	DefaultThrottleK      = 2.0
	DefaultThrottleWindow = 2 * time.Minute
)

// ThrottleConfig configures adaptive client-side throttling.
type ThrottleConfig struct {
	// K is how many requests per accepted request the client may send
	// before it starts rejecting new ones locally. Lower is more
	// aggressive. Zero means 2 (Google SRE book, "Handling Overload").
	K float64
	// Window is how long requests and accepts count. Zero means 2m.
	Window time.Duration
}

// maxDestinations caps the destinations a Throttle, a Local budget, an
// Overload or a Redis budget's pending deposits remember. The destination
// is the URL host by default, which a caller may control (webhook
// delivery), so without a cap the set grows with whatever hosts it names.
// Past the cap the least recently used is forgotten: it starts again with
// no history, as after an idle spell.
const maxDestinations = 10_000

// Throttle is client-side throttling as described in Google's SRE
// book ("Handling Overload"): per destination, it counts the attempts sent
// (requests) and those the provider accepted (a success or a business
// answer: anything but a capacity, server or transport failure). When
// requests exceed K × accepts it rejects a new call with probability
// (requests − K×accepts) / (requests + 1), before sending it (the
// Transport then ends the call with ErrThrottled). Retries are left to the
// Budget; only first attempts are throttled. It is safe for concurrent use.
// It remembers at most 10,000 destinations, the least recently used
// forgotten first, and forgets one idle for a whole Window; no call scans
// them all.
type Throttle struct {
	mu    sync.Mutex // guards dests
	dests *lru.Map[string, *throttleCounter]
	cfg   ThrottleConfig
	// rand returns a uniform pick in [0, 1); a seam for tests.
	rand func() float64
}

// NewThrottle returns an Throttle with cfg's zero fields
// defaulted.
func NewThrottle(cfg ThrottleConfig) *Throttle {
	if cfg.K <= 0 {
		cfg.K = DefaultThrottleK
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultThrottleWindow
	}
	idle := func(c *throttleCounter, now time.Time) bool { return now.Sub(c.lastUse) > cfg.Window }
	return &Throttle{dests: lru.New[string](maxDestinations, idle), cfg: cfg, rand: rand.Float64}
}

// throttleCounter is one destination's window; a: requests, b: accepts.
type throttleCounter struct {
	win     window
	lastUse time.Time
}

// RejectProbability returns the probability that a new call to dest at now
// is rejected.
func (t *Throttle) RejectProbability(dest string, now time.Time) float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.probability(dest, now)
}

// probability requires that t.mu is held.
func (t *Throttle) probability(dest string, now time.Time) float64 {
	c, ok := t.dests.Get(dest)
	if !ok {
		return 0
	}
	c.win.advance(t.cfg.Window, now)
	requests, accepts := c.win.sums()
	return max(0, (float64(requests)-t.cfg.K*float64(accepts))/float64(requests+1))
}

// Allow decides whether a new call to dest may be sent at now.
func (t *Throttle) Allow(dest string, now time.Time) bool {
	t.mu.Lock()
	p := t.probability(dest, now)
	t.mu.Unlock()
	return p == 0 || t.rand() >= p
}

// Record counts one attempt to dest at now and whether the provider
// accepted it.
func (t *Throttle) Record(dest string, now time.Time, accepted bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.dests.Get(dest)
	if !ok {
		c = &throttleCounter{}
		t.dests.Put(dest, c, now)
	}
	c.lastUse = now
	c.win.advance(t.cfg.Window, now)
	c.win.a[c.win.slot]++
	if accepted {
		c.win.b[c.win.slot]++
	}
}
