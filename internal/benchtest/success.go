// Package benchtest holds what the packages' benchmarks share.
package benchtest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Transport names a RoundTripper to benchmark, built on the bare base.
type Transport struct {
	Name string
	New  func(b *testing.B, base http.RoundTripper) http.RoundTripper
}

// SuccessPath benchmarks a successful GET on loopback: one sub-benchmark
// "bare" through the base transport, then one per Transport built on it, in
// the same run, so their ratios to the bare transport can be reported.
func SuccessPath(b *testing.B, transports ...Transport) {
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
	for _, tr := range transports {
		b.Run(tr.Name, func(b *testing.B) { run(b, tr.New(b, base)) })
	}
}
