package peers

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// chargeBody is the body of every POST: small, like a payment API call.
const chargeBody = `{"amount":1999,"currency":"eur","order":"order-1"}`

// successServer is the loopback provider of the success path.
func successServer() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, okBody)
	}))
}

// sender returns a function that sends one GET, or one POST with
// chargeBody, through rt to url and reads and closes the response. The
// request is built per call (a POST's body is consumed): every contender
// pays the same for it.
func sender(rt http.RoundTripper, method, url string, fail func(...any)) func() {
	return func() {
		var body io.Reader
		if method == "POST" {
			body = strings.NewReader(chargeBody)
		}
		req, _ := http.NewRequest(method, url, body)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			fail(err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// BenchmarkSuccessPath sends one GET, or one POST, that succeeds at once,
// through each contender and through the bare base they all share: over
// loopback to one server ("loopback"), and through a base without a
// network ("memory"), which leaves the library's own cost per call. Read
// loopback as the ratio to "bare" and memory as the difference to "bare";
// TestScenarios/success_path measures both interleaved, which is steadier
// on a shared machine.
func BenchmarkSuccessPath(b *testing.B) {
	srv := successServer()
	defer srv.Close()
	for _, path := range []string{"loopback", "memory"} {
		for _, c := range []contender{bare(), rbDefault(), retryable(), failsafe()} {
			var base http.RoundTripper = canned{}
			if path == "loopback" {
				t := newBase()
				defer t.CloseIdleConnections()
				base = t
			}
			rt := c.rt(base)
			for _, method := range []string{"GET", "POST"} {
				b.Run(path+"/"+c.name+"/"+method, func(b *testing.B) {
					send := sender(rt, method, srv.URL, b.Fatal)
					b.ReportAllocs()
					for b.Loop() {
						send()
					}
				})
			}
		}
	}
}
