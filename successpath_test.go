package retrybudget

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// canned is a base RoundTripper without a network: it consumes the request
// body, as a transport must, and answers 200 at once. Through it, a test or
// a benchmark sees the Transport's own cost per call.
type canned struct{}

func (canned) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, ContentLength: 2, Body: io.NopCloser(strings.NewReader("ok")), Request: req,
	}, nil
}

// cannedCall returns a function that sends one successful GET, or one POST
// with a small JSON body (which gets a generated Idempotency-Key by
// default), through rt, and reads and closes the response. The request is
// built per call, since a POST's body is consumed: bare and the Transport
// pay the same for it.
func cannedCall(tb testing.TB, rt http.RoundTripper, method string) func() {
	return func() {
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(`{"amount":1999,"currency":"eur"}`)
		}
		req, _ := http.NewRequest(method, "http://api.example/v1/charges", body)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			tb.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// BenchmarkOwnCost sends a successful GET, and a keyed POST, through the
// Transport on a base without a network, and through that bare base: the
// difference between the two is the Transport's own cost per call.
func BenchmarkOwnCost(b *testing.B) {
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		for _, name := range []string{"bare", "retrybudget"} {
			var rt http.RoundTripper = canned{}
			if name == "retrybudget" {
				rt = New(Config{Base: canned{}})
			}
			b.Run(method+"/"+name, func(b *testing.B) {
				send := cannedCall(b, rt, method)
				b.ReportAllocs()
				for b.Loop() {
					send()
				}
			})
		}
	}
}

// TestSuccessPathAllocations pins the allocations the Transport adds to a
// successful call, over the bare base's, so that they do not creep back: one
// for a GET (the call's state, which carries the Outcome on the response),
// and a handful for a POST with its generated key (the key, the request's
// own copy of the headers, and the hooks that trace whether it was
// written).
func TestSuccessPathAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector adds allocations of its own (crypto/rand, sync.Pool)")
	}
	for _, tc := range []struct {
		method string
		max    float64
	}{
		{http.MethodGet, 1},
		{http.MethodPost, 6},
	} {
		t.Run(tc.method, func(t *testing.T) {
			bare := testing.AllocsPerRun(200, cannedCall(t, canned{}, tc.method))
			own := testing.AllocsPerRun(200, cannedCall(t, New(Config{Base: canned{}}), tc.method)) - bare
			if own > tc.max {
				t.Fatalf("the Transport adds %.0f allocations to a %s over the bare base's %.0f; want at most %.0f",
					own, tc.method, bare, tc.max)
			}
		})
	}
}
