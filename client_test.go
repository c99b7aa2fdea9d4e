package retrybudget

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// get sends method to url through rt with ctx.
func send(ctx context.Context, t *testing.T, rt http.RoundTripper, method, url, body string) (*http.Response, error) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	return rt.RoundTrip(req)
}

// finalOutcome reads and closes resp's body and returns its Outcome.
func finalOutcome(t *testing.T, resp *http.Response) Outcome {
	t.Helper()
	o, ok := OutcomeOf(resp)
	if !ok {
		t.Fatal("OutcomeOf: no outcome on a Transport response")
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return o
}

func TestRoundTripperContract(t *testing.T) {
	p := newProvider(t, status(503), status(200))
	tr, _ := newFakeTransport(Config{})
	req, _ := http.NewRequest("POST", p.URL, io.NopCloser(strings.NewReader("payload")))
	req.Header.Set("X-Trace", "1")
	before := req.Header.Clone()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	finalOutcome(t, resp)
	if len(req.Header) != len(before) || req.Header.Get("Idempotency-Key") != "" || req.Header.Get("X-Trace") != "1" {
		t.Fatalf("caller's headers changed: %v; were %v", req.Header, before)
	}
	if req.GetBody != nil {
		t.Fatal("caller's request got a GetBody")
	}
	for _, r := range p.requests() {
		if r.body != "payload" {
			t.Fatalf("provider got body %q; want %q on every attempt", r.body, "payload")
		}
	}
}

// The key goes out in the Transport's own copy of the headers: a base that
// sets or adds headers on the request it gets leaves the caller's alone.
func TestKeyedHeaderCopyLeavesTheCallersHeadersAlone(t *testing.T) {
	base := rtFunc(func(r *http.Request) (*http.Response, error) {
		r.Header.Add("X-Tag", "base")
		r.Header.Set("X-Other", "base")
		return canned{}.RoundTrip(r)
	})
	tr := New(Config{Base: base})
	req, _ := http.NewRequest("POST", "http://api.example/charges", strings.NewReader("x"))
	req.Header.Add("X-Tag", "caller")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	finalOutcome(t, resp)
	if len(req.Header) != 1 || len(req.Header["X-Tag"]) != 1 || req.Header.Get("X-Tag") != "caller" {
		t.Fatalf("caller's headers changed: %v", req.Header)
	}
	sent := resp.Request.Header
	if got := sent["X-Tag"]; len(got) != 2 || got[0] != "caller" || got[1] != "base" || sent.Get(DefaultKeyHeader) == "" {
		t.Fatalf("request sent with headers %v; want the caller's X-Tag, the base's, and the key", sent)
	}
}

func TestRetriedResponsesAreDrainedAndConnectionReused(t *testing.T) {
	big := strings.Repeat("x", 8<<10)
	p := newProvider(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(503)
		io.WriteString(w, big)
	}, status(200))
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	tr, _ := newFakeTransport(Config{Base: base})
	resp, err := send(context.Background(), t, tr, "GET", p.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	finalOutcome(t, resp)
	if n := p.connections(); n != 1 {
		t.Fatalf("%d connections for 2 attempts; want 1 (drained and reused)", n)
	}
}

func TestFinalResponseIsUnreadAndCarriesProblem(t *testing.T) {
	problem := `{"type":"https://example.com/probs/out-of-credit","title":"You do not have enough credit.","status":403,"detail":"Your balance is 30."}`
	p := newProvider(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(403)
		io.WriteString(w, problem)
	})
	tr, _ := newFakeTransport(Config{})
	resp, err := send(context.Background(), t, tr, "GET", p.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	o, _ := OutcomeOf(resp)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != problem {
		t.Fatalf("body %q; want the provider's body unread", b)
	}
	if o.Class != ClassBusiness || o.Problem == nil || o.Problem.Type != "https://example.com/probs/out-of-credit" ||
		o.Problem.Detail != "Your balance is 30." || o.Problem.Status != 403 {
		t.Fatalf("outcome %+v problem %+v; want business with the problem details", o, o.Problem)
	}
}
