package retrybudget

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkSuccessPath compares a successful GET on loopback through the
// Transport with the same GET through the bare base transport, in one run.
// Report the ratio of the two, not the absolute times.
func BenchmarkSuccessPath(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	base := &http.Transport{MaxIdleConnsPerHost: 64}
	defer base.CloseIdleConnections()
	run := func(b *testing.B, rt http.RoundTripper) {
		req, _ := http.NewRequest("GET", srv.URL, nil)
		b.ReportAllocs()
		for b.Loop() {
			resp, err := rt.RoundTrip(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	b.Run("bare", func(b *testing.B) { run(b, base) })
	b.Run("retrybudget", func(b *testing.B) { run(b, New(Config{Base: base})) })
}
