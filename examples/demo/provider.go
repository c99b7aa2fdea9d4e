package main

import (
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// provider is a flaky payment API on loopback. POST /v1/charges applies a
// charge at most once per Idempotency-Key, and injects the faults of its
// faultPlan: rate limits with both forms of Retry-After, 503s, and lost
// responses whose charge was applied anyway. A charge with a non-positive
// amount is rejected with 400, like any business error.
type provider struct {
	mu   sync.Mutex     // guards seen
	seen map[string]int // idempotency key → requests seen with it

	faults faultPlan
	ledger *ledger
	// requests counts every request that reached the handler, including
	// those the client's http.Transport re-sent on its own.
	requests atomic.Int64

	srv  *http.Server
	url  string
	done chan struct{} // closed when Serve returns
}

// startProvider serves a provider on 127.0.0.1 until close is called.
func startProvider(seed uint64) (*provider, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &provider{
		faults: faultPlan{seed: seed},
		ledger: newLedger(),
		seen:   make(map[string]int),
		url:    "http://" + ln.Addr().String(),
		done:   make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/charges", p.charge)
	p.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		// Dropped connections are the point of the exercise, not news.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	go func() {
		defer close(p.done)
		p.srv.Serve(ln)
	}()
	return p, nil
}

// close stops the server, drops its connections and waits for Serve to
// return.
func (p *provider) close() {
	p.srv.Close()
	<-p.done
}

// charge handles POST /v1/charges.
func (p *provider) charge(w http.ResponseWriter, r *http.Request) {
	p.requests.Add(1)
	var c charge
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&c); err != nil {
		writeProblem(w, http.StatusBadRequest, "malformed body")
		return
	}
	key := r.Header.Get("Idempotency-Key")
	f := p.faults.pick(key, p.count(key))
	switch f {
	case faultBusy:
		w.Header().Set("Retry-After", "1")
		writeProblem(w, http.StatusTooManyRequests, "rate limited")
		return
	case faultBusyUntil:
		// IMF-fixdate has whole seconds, so two seconds ahead means a
		// wait of one to two.
		w.Header().Set("Retry-After", time.Now().Add(2*time.Second).UTC().Format(http.TimeFormat))
		writeProblem(w, http.StatusTooManyRequests, "rate limited")
		return
	case faultUnavailable:
		writeProblem(w, http.StatusServiceUnavailable, "temporarily unavailable")
		return
	case faultGoAway:
		w.Header().Set("Retry-After", strconv.Itoa(3600))
		writeProblem(w, http.StatusTooManyRequests, "quota exhausted for this hour")
		return
	}
	if c.Amount <= 0 {
		writeProblem(w, http.StatusBadRequest, "invalid amount")
		return
	}
	rec, replayed := p.ledger.apply(key, c)
	if f == faultLost {
		drop(w)
		return
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(rec)
}

// count returns how many requests with key came before this one.
func (p *provider) count(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.seen[key]
	p.seen[key] = n + 1
	return n
}

// drop closes the connection without answering: the client cannot tell
// whether the charge was applied.
func drop(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // also closes the connection unanswered
	}
	conn.Close()
}

// writeProblem answers with RFC 9457 problem details.
func writeProblem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{
		"title":  http.StatusText(status),
		"status": status,
		"detail": detail,
	})
}
