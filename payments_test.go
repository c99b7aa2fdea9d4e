package retrybudget

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// payments is a fake provider that applies one effect per request it
// processes, deduplicating by Idempotency-Key when dedup is set: a repeated
// key gets the stored answer and no new effect. Its effects count is what
// the ledger tests assert, not HTTP responses.
type payments struct {
	*httptest.Server
	dedup bool
	mu    sync.Mutex // guards all below
	// effects counts effects per key; calls counts requests received.
	effects map[string]int
	calls   int
	// fault, when set, decides per request (1-based count) what happens
	// after the effect is applied: "" answers 201, "lost" drops the
	// connection, a number answers that status without applying.
	fault func(n int) string
	// hold, when set, is called after the effect is applied and before
	// the answer, so a test can act at that point.
	hold func()
}

func newPayments(t *testing.T, dedup bool) *payments {
	t.Helper()
	p := &payments{dedup: dedup, effects: map[string]int{}}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.Close)
	return p
}

func (p *payments) serve(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	key := r.Header.Get("Idempotency-Key")
	p.mu.Lock()
	p.calls++
	what := ""
	if p.fault != nil {
		what = p.fault(p.calls)
	}
	if what != "" && what != "lost" {
		p.mu.Unlock()
		var code int
		fmt.Sscan(what, &code)
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(code)
		return
	}
	if !p.dedup || p.effects[key] == 0 {
		p.effects[key]++
	}
	hold := p.hold
	p.mu.Unlock()
	if hold != nil {
		hold()
	}
	if what == "lost" {
		lost(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Set-Cookie", "session=secret")
	w.WriteHeader(201)
	fmt.Fprintf(w, `{"charge":%q}`, key)
}

// total returns the effects applied for all keys and the requests received.
func (p *payments) total() (effects, calls int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, n := range p.effects {
		effects += n
	}
	return effects, p.calls
}
