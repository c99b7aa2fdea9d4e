package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// Fault kinds the provider injects, each with its share of requests.
const (
	faultResetBefore = "reset before processing"
	faultLost        = "lost response"
	fault503         = "503"
	fault429         = "429 burst (1 s, both Retry-After forms)"
	faultSlow        = "slow past the attempt timeout"
)

var faultMix = []struct {
	kind  string
	share float64
}{
	{faultResetBefore, 0.04},
	{faultLost, 0.04},
	{fault503, 0.04},
	{fault429, 0.01},
	{faultSlow, 0.02},
}

// provider is a fake payment API: it enforces a per-credential rate
// (answering 429 with Retry-After above it), injects faults, applies one
// effect per request it processes and deduplicates by Idempotency-Key.
// Effects are also counted per action (from the body), so a client that
// sent one action under two keys would show as a duplicate.
type provider struct {
	*httptest.Server
	slow time.Duration

	mu       sync.Mutex // guards all below
	rng      *rand.Rand
	limits   map[string]*rate.Limiter
	limit    rate.Limit
	burst    int
	byKey    map[string][]byte // stored answers
	effects  map[string]int    // per action
	arrivals int
	rate429  int // refusals by the enforced rate
	faults   map[string]int
	// burstUntil is the end of the current injected 429 burst: every
	// request until then is refused, as a provider shedding load does.
	burstUntil time.Time
	// inBurst counts arrivals during a burst, after its first 100 ms:
	// requests the fleet should have held back, since the first 429 of
	// the burst paused the boundary for every worker.
	inBurst int
}

func newProvider(t *testing.T, seed uint64, perSec, burst int, slow time.Duration) *provider {
	p := &provider{
		slow: slow, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		limits: map[string]*rate.Limiter{}, limit: rate.Limit(perSec), burst: burst,
		byKey: map[string][]byte{}, effects: map[string]int{}, faults: map[string]int{},
	}
	p.Server = httptest.NewUnstartedServer(http.HandlerFunc(p.serve))
	p.Config.ErrorLog = discardLog()
	p.Start()
	t.Cleanup(p.Close)
	return p
}

func (p *provider) serve(w http.ResponseWriter, r *http.Request) {
	var req struct{ Action string }
	body, _ := io.ReadAll(r.Body)
	json.Unmarshal(body, &req)
	key := r.Header.Get("Idempotency-Key")

	p.mu.Lock()
	p.arrivals++
	if now := time.Now(); now.Before(p.burstUntil) {
		if p.burstUntil.Sub(now) < 900*time.Millisecond {
			p.inBurst++
		}
		until := p.burstUntil
		p.mu.Unlock()
		retryAfterUntil(w, until, p.coin())
		return
	}
	lim := p.limits[r.Header.Get("Authorization")]
	if lim == nil {
		lim = rate.NewLimiter(p.limit, p.burst)
		p.limits[r.Header.Get("Authorization")] = lim
	}
	if !lim.Allow() {
		p.rate429++
		p.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	fault := p.pickFault()
	p.mu.Unlock()

	switch fault {
	case faultResetBefore:
		hangUp(w)
		return
	case fault503:
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	case fault429:
		until := time.Now().Add(time.Second)
		p.mu.Lock()
		p.burstUntil = until
		p.mu.Unlock()
		retryAfterUntil(w, until, p.coin())
		return
	case faultSlow:
		time.Sleep(p.slow) // the client's attempt timeout is shorter: it gives up
	}
	answer := p.apply(key, req.Action)
	if fault == faultLost {
		hangUp(w)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	w.Write(answer)
}

// apply applies the action's effect once per key and returns the answer.
func (p *provider) apply(key, action string) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.byKey[key]; ok && key != "" {
		return a
	}
	p.effects[action]++
	a := []byte(fmt.Sprintf(`{"id":"ch_%d","action":%q}`, len(p.byKey), action))
	p.byKey[key] = a
	return a
}

// pickFault requires that p.mu is held.
func (p *provider) pickFault() string {
	x := p.rng.Float64()
	for _, f := range faultMix {
		if x < f.share {
			p.faults[f.kind]++
			return f.kind
		}
		x -= f.share
	}
	return ""
}

func (p *provider) coin() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rng.IntN(2) == 0
}

// retryAfterUntil answers 429 with a Retry-After that ends at until, as
// delta-seconds or as an HTTP-date (RFC 9110 §10.2.3), rounded up.
func retryAfterUntil(w http.ResponseWriter, until time.Time, asDate bool) {
	if asDate {
		w.Header().Set("Retry-After", until.Add(time.Second).UTC().Format(http.TimeFormat))
	} else {
		w.Header().Set("Retry-After", fmt.Sprint(int(time.Until(until).Seconds())+1))
	}
	w.WriteHeader(http.StatusTooManyRequests)
}

// hangUp drops the connection without an answer.
func hangUp(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

// stats is a snapshot of the provider's counts.
type stats struct {
	arrivals, rate429, inBurst, effects, duplicates int
	perAction                                       map[string]int
	faults                                          map[string]int
}

func (p *provider) stats() stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := stats{arrivals: p.arrivals, rate429: p.rate429, inBurst: p.inBurst, perAction: map[string]int{}, faults: map[string]int{}}
	for a, n := range p.effects {
		s.perAction[a] = n
		s.effects += n
		if n > 1 {
			s.duplicates += n - 1
		}
	}
	for k, n := range p.faults {
		s.faults[k] = n
	}
	return s
}
