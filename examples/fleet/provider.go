package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// burstWindow is how much of its rate the provider's token bucket lets
// through at once, as real providers' limiters do (at least 10 requests).
// It absorbs the jitter between the moment the fleet's limiter grants a
// request (by Redis TIME) and the moment the request reaches the provider.
const burstWindow = 200 * time.Millisecond

// provider is a payment API on loopback with one API key, metered at a
// fixed rate. POST /v1/charges applies a charge; a repeated Idempotency-Key
// gets the first answer again, but every accepted charge is counted as a
// provider that does not deduplicate would count it, so a second one under
// one key is a duplicate effect.
type provider struct {
	mu      sync.Mutex              // guards the fields up to the blank line
	tokens  float64                 // the key's token bucket
	last    time.Time               // when tokens was last refilled
	charges map[string]chargeAnswer // idempotency key → first answer
	stats   providerStats

	apiKey string
	rate   float64 // requests per second allowed to apiKey
	burst  float64 // the bucket's size
	srv    *http.Server
	url    string
	done   chan struct{} // closed when Serve returns
}

// providerStats is what the provider counted.
type providerStats struct {
	// Effects counts first charges per tenant (the charge's
	// metadata[tenant]).
	Effects map[string]int
	// Duplicates counts accepted charges under a key already charged.
	Duplicates int
	// Limited counts requests answered 429.
	Limited int
	// Requests counts every request that reached the handler.
	Requests int
}

// chargeAnswer is the provider's answer to an applied charge.
type chargeAnswer struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
	Order  string `json:"order"`
}

// startProvider serves a provider for apiKey, allowing rate requests per
// second, on 127.0.0.1 until close is called.
func startProvider(apiKey string, rate int) (*provider, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	burst := max(10, float64(rate)*burstWindow.Seconds())
	p := &provider{
		tokens:  burst,
		burst:   burst,
		last:    time.Now(),
		charges: make(map[string]chargeAnswer),
		stats:   providerStats{Effects: make(map[string]int)},
		apiKey:  apiKey,
		rate:    float64(rate),
		url:     "http://" + ln.Addr().String(),
		done:    make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/charges", p.serveCharge)
	p.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() {
		defer close(p.done)
		_ = p.srv.Serve(ln)
	}()
	return p, nil
}

// close stops the server and waits for Serve to return.
func (p *provider) close() {
	_ = p.srv.Close()
	<-p.done
}

// counts returns a copy of what the provider counted so far.
func (p *provider) counts() providerStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Effects = make(map[string]int, len(p.stats.Effects))
	for t, n := range p.stats.Effects {
		s.Effects[t] = n
	}
	return s
}

// serveCharge handles POST /v1/charges.
func (p *provider) serveCharge(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+p.apiKey {
		p.count(func(s *providerStats) { s.Requests++ })
		writeProblem(w, http.StatusUnauthorized, "unknown API key")
		return
	}
	if err := r.ParseForm(); err != nil {
		p.count(func(s *providerStats) { s.Requests++ })
		writeProblem(w, http.StatusBadRequest, "malformed body")
		return
	}
	amount, err := strconv.Atoi(r.PostForm.Get("amount"))
	if err != nil || amount <= 0 {
		p.count(func(s *providerStats) { s.Requests++ })
		writeProblem(w, http.StatusBadRequest, "invalid amount")
		return
	}
	key := r.Header.Get("Idempotency-Key")
	tenant, order := r.PostForm.Get("metadata[tenant]"), r.PostForm.Get("metadata[order]")

	p.mu.Lock()
	p.stats.Requests++
	if wait, ok := p.takeLocked(time.Now()); !ok {
		p.stats.Limited++
		p.mu.Unlock()
		// RFC 9110 §10.2.3: delay-seconds, whole seconds, rounded up.
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		writeProblem(w, http.StatusTooManyRequests, "rate limit exceeded for this API key")
		return
	}
	c, seen := p.charges[key]
	if seen {
		p.stats.Duplicates++
	} else {
		c = chargeAnswer{ID: fmt.Sprintf("ch_%06d", p.stats.Requests), Amount: amount, Order: order}
		p.stats.Effects[tenant]++
		if key != "" {
			p.charges[key] = c
		}
	}
	p.mu.Unlock()

	if seen {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(c)
}

// takeLocked takes one token from the key's bucket at now, or reports how
// long until one is due. It requires that p.mu is held.
func (p *provider) takeLocked(now time.Time) (time.Duration, bool) {
	p.tokens = min(p.burst, p.tokens+now.Sub(p.last).Seconds()*p.rate)
	p.last = now
	if p.tokens >= 1 {
		p.tokens--
		return 0, true
	}
	return time.Duration((1 - p.tokens) / p.rate * float64(time.Second)), false
}

// count applies f to the stats under the lock.
func (p *provider) count(f func(*providerStats)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(&p.stats)
}

// writeProblem answers with RFC 9457 problem details.
func writeProblem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"title":  http.StatusText(status),
		"status": status,
		"detail": detail,
	})
}
