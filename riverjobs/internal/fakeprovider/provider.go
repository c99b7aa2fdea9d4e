// Package fakeprovider is a local payment API for the riverjobs tests and
// example: it applies one effect per idempotency key, counts effects per
// order (so one order charged under two keys shows as a duplicate) and
// injects the faults a real provider shows: 429 bursts with Retry-After,
// 503s, and responses lost after the charge was applied.
package fakeprovider

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"
)

// Charge is the request body of POST /charges.
type Charge struct {
	Order  string `json:"order"`
	Amount int    `json:"amount"`
}

// Faults says how often the provider misbehaves. Shares are of the
// requests that reach the fault draw; zero means never.
type Faults struct {
	// Burst429 is the share of requests that start a burst: for a time
	// drawn between BurstLength/4 and BurstLength, every request is
	// refused with 429 and a Retry-After naming the burst's end.
	Burst429 float64
	// BurstLength is the longest burst. Zero means 1s.
	BurstLength time.Duration
	// Unavailable is the share answered 503 without Retry-After.
	Unavailable float64
	// Lost is the share applied, whose response is then dropped (the
	// connection is closed without an answer).
	Lost float64
	// Seed seeds the fault draw.
	Seed uint64
}

// Provider is the fake API. Orders whose amount is negative are rejected
// with 422, as a business error.
type Provider struct {
	*httptest.Server

	mu         sync.Mutex // guards all below
	faults     Faults
	rng        *rand.Rand
	answers    map[string]stored // by idempotency key
	effects    map[string]int    // by order
	arrivals   int
	replays    int // requests answered from answers: a key seen again
	burstUntil time.Time
	counts     map[string]int // by fault kind
}

// Start starts a Provider on loopback; Close stops it.
func Start(f Faults) *Provider {
	if f.BurstLength <= 0 {
		f.BurstLength = time.Second
	}
	p := &Provider{
		faults: f, rng: rand.New(rand.NewPCG(f.Seed, f.Seed^0x9e3779b97f4a7c15)),
		answers: map[string]stored{}, effects: map[string]int{}, counts: map[string]int{},
	}
	p.Server = httptest.NewUnstartedServer(http.HandlerFunc(p.serve))
	p.Start()
	return p
}

// SetFaults replaces the fault shares, such as to end the faults.
func (p *Provider) SetFaults(f Faults) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if f.BurstLength <= 0 {
		f.BurstLength = time.Second
	}
	p.faults = f
}

// StartBurst refuses every request with 429 for d from now.
func (p *Provider) StartBurst(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.burstUntil = time.Now().Add(d)
}

func (p *Provider) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var c Charge
	if err := json.Unmarshal(body, &c); err != nil || c.Order == "" {
		http.Error(w, "bad charge", http.StatusBadRequest)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		http.Error(w, "Idempotency-Key required", http.StatusBadRequest)
		return
	}

	p.mu.Lock()
	p.arrivals++
	now := time.Now()
	if now.Before(p.burstUntil) {
		until := p.burstUntil
		p.counts["429"]++
		p.mu.Unlock()
		refuse(w, until)
		return
	}
	if a, ok := p.answers[key]; ok {
		// The first answer again, status included, as a provider
		// honouring Idempotency-Key does.
		p.replays++
		p.mu.Unlock()
		answer(w, a.status, a.body)
		return
	}
	fault := p.draw()
	if fault == "429" {
		l := p.faults.BurstLength
		p.burstUntil = now.Add(l/4 + time.Duration(p.rng.Int64N(int64(l-l/4)+1)))
	}
	until := p.burstUntil
	var a []byte
	status := http.StatusCreated
	if fault == "" || fault == "lost" {
		if c.Amount < 0 {
			status = http.StatusUnprocessableEntity
			a = []byte(`{"error":"amount must not be negative"}`)
		} else {
			p.effects[c.Order]++
			a = []byte(fmt.Sprintf(`{"id":"ch_%d","order":%q}`, len(p.answers), c.Order))
		}
		p.answers[key] = stored{status: status, body: a}
	}
	p.mu.Unlock()

	switch fault {
	case "429":
		refuse(w, until)
	case "503":
		w.WriteHeader(http.StatusServiceUnavailable)
	case "lost":
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	default:
		answer(w, status, a)
	}
}

// draw picks the fault of one request. It requires that p.mu is held.
func (p *Provider) draw() string {
	x := p.rng.Float64()
	for _, f := range [...]struct {
		kind  string
		share float64
	}{{"429", p.faults.Burst429}, {"503", p.faults.Unavailable}, {"lost", p.faults.Lost}} {
		if x < f.share {
			p.counts[f.kind]++
			return f.kind
		}
		x -= f.share
	}
	return ""
}

// refuse answers 429 with a Retry-After in whole seconds, rounded up, that
// ends no sooner than until (RFC 9110 §10.2.3).
func refuse(w http.ResponseWriter, until time.Time) {
	secs := int((time.Until(until) + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
	w.WriteHeader(http.StatusTooManyRequests)
}

// stored is the answer given to one idempotency key.
type stored struct {
	status int
	body   []byte
}

func answer(w http.ResponseWriter, status int, a []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(a)
}

// Stats is a snapshot of the provider's counts.
type Stats struct {
	// Arrivals counts requests.
	Arrivals int
	// Replays counts requests whose key had been answered before.
	Replays int
	// Effects counts charges applied, over all orders.
	Effects int
	// Duplicates counts charges applied beyond the first of their order.
	Duplicates int
	// PerOrder counts the charges applied per order.
	PerOrder map[string]int
	// Faults counts injected faults by kind ("429" counts every refusal
	// of a burst).
	Faults map[string]int
}

// Stats returns the counts so far.
func (p *Provider) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Stats{Arrivals: p.arrivals, Replays: p.replays, PerOrder: map[string]int{}, Faults: map[string]int{}}
	for o, n := range p.effects {
		s.PerOrder[o] = n
		s.Effects += n
		s.Duplicates += n - 1
	}
	for k, n := range p.counts {
		s.Faults[k] = n
	}
	return s
}
