package retrybudget

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
)

// step is one scripted provider answer.
type step func(w http.ResponseWriter, r *http.Request)

// seen is one request as the provider received it.
type seen struct {
	method string
	key    string
	body   string
}

// provider is an httptest.Server that answers each request with the next
// step of its script (the last step repeats) and records what it received.
type provider struct {
	*httptest.Server
	mu    sync.Mutex // guards steps, reqs, conns
	steps []step
	reqs  []seen
	conns int
}

func newProvider(t *testing.T, steps ...step) *provider {
	t.Helper()
	p := &provider{steps: steps}
	p.Server = httptest.NewUnstartedServer(http.HandlerFunc(p.serve))
	p.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			p.mu.Lock()
			p.conns++
			p.mu.Unlock()
		}
	}
	p.Start()
	t.Cleanup(p.Close)
	return p
}

func (p *provider) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	p.reqs = append(p.reqs, seen{method: r.Method, key: r.Header.Get("Idempotency-Key"), body: string(b)})
	s := p.steps[min(len(p.reqs), len(p.steps))-1]
	p.mu.Unlock()
	s(w, r)
}

func (p *provider) requests() []seen {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]seen(nil), p.reqs...)
}

func (p *provider) connections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conns
}

// status answers code with the given header pairs and a short body.
func status(code int, kv ...string) step {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(kv); i += 2 {
			w.Header().Set(kv[i], kv[i+1])
		}
		w.WriteHeader(code)
		io.WriteString(w, "status "+strconv.Itoa(code))
	}
}

// lost reads the whole request, then drops the connection without an answer:
// the provider may have applied it.
func lost(w http.ResponseWriter, r *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	conn.Close()
}
