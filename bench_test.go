package retrybudget

import (
	"net/http"
	"testing"

	"github.com/retrybudget/retrybudget/internal/benchtest"
)

// BenchmarkSuccessPath compares a successful GET on loopback through the
// Transport with the same GET through the bare base transport, in one run.
// Report the ratio of the two, not the absolute times.
func BenchmarkSuccessPath(b *testing.B) {
	benchtest.SuccessPath(b, benchtest.Transport{Name: "retrybudget", New: func(_ *testing.B, base http.RoundTripper) http.RoundTripper {
		return New(Config{Base: base})
	}})
}
