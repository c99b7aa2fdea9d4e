package fakes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Provider is a running fake provider. It is safe for concurrent use.
type Provider struct {
	// Server is the fake's HTTP server; its URL is the SDK's base URL.
	Server *httptest.Server
	spec   spec

	mu       sync.Mutex // guards the fields below
	arrivals []Arrival
	effects  int
	stored   map[string]*stored // by credential and key
	fault    func(*http.Request) *Reply
	onEffect func(*http.Request)
}

// Arrival is one request as the fake received it.
type Arrival struct {
	Method, Path string
	// Key is the value of the provider's key header, or of
	// Idempotency-Key for a provider that honours none.
	Key string
	// RetryCount is X-Stainless-Retry-Count, if sent.
	RetryCount string
	// Token is the credential: the Authorization header, or a form body's
	// token field.
	Token string
	// At is when it arrived.
	At time.Time
	// Target reports that it asked for an effect (it reached an effect
	// endpoint, such as POST /v1/charges), whether or not it applied one.
	Target bool
	// Effect reports that it applied an effect.
	Effect bool
}

// Reply is an injected answer.
type Reply struct {
	Status int
	Header http.Header
	// Body is the answer's body; empty means the provider's error body for
	// Status.
	Body string
	// AfterEffect applies the request's effect before answering, as a
	// provider that fails after doing the work does.
	AfterEffect bool
	// Reset closes the connection instead of answering, as a provider
	// behind a failing load balancer does.
	Reset bool
}

// stored is a key's first answer, or its request still in flight.
type stored struct {
	inFlight bool
	status   int
	body     string
}

// spec describes one provider.
type spec struct {
	// keyHeader is the header the provider deduplicates by; empty when it
	// honours none.
	keyHeader string
	// inFlight409 answers 409 to a request whose key is in flight.
	inFlight409 bool
	// effect reports whether a request applies an effect.
	effect func(*http.Request) bool
	// answer is the success answer to a request; n numbers the effects.
	answer func(r *http.Request, n int) (int, string)
	// errorBody is the provider's error body for a status.
	errorBody func(status int) string
}

func newProvider(s spec) *Provider {
	p := &Provider{spec: s, stored: map[string]*stored{}}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	return p
}

// URL returns the fake's base URL.
func (p *Provider) URL() string { return p.Server.URL }

// Close shuts the fake down.
func (p *Provider) Close() { p.Server.Close() }

// Fail makes the fake answer with fault's Reply whenever fault returns
// one; nil stops the faults.
func (p *Provider) Fail(fault func(*http.Request) *Reply) {
	p.mu.Lock()
	p.fault = fault
	p.mu.Unlock()
}

// Outage makes every effect call (not auxiliary calls such as PayPal's
// token) fail with status and, when retryAfter is positive, a Retry-After
// in whole seconds, applying nothing; Outage(0, 0) ends it.
func (p *Provider) Outage(status int, retryAfter time.Duration) {
	if status == 0 {
		p.Fail(nil)
		return
	}
	p.Fail(func(r *http.Request) *Reply {
		if !p.spec.effect(r) {
			return nil
		}
		h := http.Header{}
		if retryAfter > 0 {
			h.Set("Retry-After", fmt.Sprint(int(retryAfter/time.Second)))
		}
		return &Reply{Status: status, Header: h}
	})
}

// ResetOutage makes every effect call lose its connection without an
// answer, applying nothing; Outage(0, 0) ends it.
func (p *Provider) ResetOutage() {
	p.Fail(func(r *http.Request) *Reply {
		if !p.spec.effect(r) {
			return nil
		}
		return &Reply{Reset: true}
	})
}

// OnEffect calls hook after an effect is applied and stored, before the
// answer is written: a test blocks there to kill the caller mid-call.
func (p *Provider) OnEffect(hook func(*http.Request)) {
	p.mu.Lock()
	p.onEffect = hook
	p.mu.Unlock()
}

// Effects returns the number of effects applied.
func (p *Provider) Effects() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.effects
}

// Arrivals returns every request received, oldest first.
func (p *Provider) Arrivals() []Arrival {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Arrival(nil), p.arrivals...)
}

// Targets returns the arrivals that asked for an effect, oldest first:
// one per send of an effect call, whatever the answer.
func (p *Provider) Targets() []Arrival {
	var out []Arrival
	for _, a := range p.Arrivals() {
		if a.Target {
			out = append(out, a)
		}
	}
	return out
}

func (p *Provider) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body)) // for a fault that reads it
	token := r.Header.Get("Authorization")
	if token == "" && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		if form, err := url.ParseQuery(string(body)); err == nil {
			token = form.Get("token")
		}
	}
	keyHeader := p.spec.keyHeader
	if keyHeader == "" {
		keyHeader = "Idempotency-Key"
	}
	a := Arrival{Method: r.Method, Path: r.URL.Path, Key: r.Header.Get(keyHeader),
		RetryCount: r.Header.Get("X-Stainless-Retry-Count"), Token: token, At: time.Now()}
	effect := p.spec.effect(r)
	a.Target = effect

	p.mu.Lock()
	fault := p.fault
	var reply *Reply
	if fault != nil {
		reply = fault(r)
	}
	if reply != nil && !reply.AfterEffect {
		p.arrivals = append(p.arrivals, a)
		p.mu.Unlock()
		if reply.Reset {
			reset(w)
			return
		}
		p.write(w, reply.Status, reply.Header, reply.Body)
		return
	}
	if !effect {
		p.arrivals = append(p.arrivals, a)
		p.mu.Unlock()
		status, out := p.spec.answer(r, 0)
		p.write(w, status, nil, out)
		return
	}
	// An effect: deduplicate by key where the provider does.
	sk := token + "\x00" + a.Key
	if p.spec.keyHeader != "" && a.Key != "" {
		if s := p.stored[sk]; s != nil {
			p.arrivals = append(p.arrivals, a)
			p.mu.Unlock()
			if s.inFlight && p.spec.inFlight409 {
				p.write(w, http.StatusConflict, nil, p.spec.errorBody(http.StatusConflict))
				return
			}
			h := http.Header{"Idempotent-Replayed": {"true"}}
			p.write(w, s.status, h, s.body)
			return
		}
	}
	p.effects++
	n := p.effects
	a.Effect = true
	p.arrivals = append(p.arrivals, a)
	status, out := p.spec.answer(r, n)
	if reply != nil {
		status, out = reply.Status, reply.Body
		if out == "" {
			out = p.spec.errorBody(status)
		}
	}
	s := &stored{inFlight: true, status: status, body: out}
	if p.spec.keyHeader != "" && a.Key != "" {
		p.stored[sk] = s
	}
	hook := p.onEffect
	p.mu.Unlock()
	if hook != nil {
		hook(r)
	}
	p.mu.Lock()
	s.inFlight = false
	p.mu.Unlock()
	var h http.Header
	if reply != nil {
		h = reply.Header
	}
	p.write(w, status, h, out)
}

func (p *Provider) write(w http.ResponseWriter, status int, h http.Header, body string) {
	for k, vs := range h {
		w.Header()[k] = vs
	}
	if body == "" && status >= 400 {
		body = p.spec.errorBody(status)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// reset closes the request's connection without an answer.
func reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	conn.Close()
}

// jsonString quotes s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
