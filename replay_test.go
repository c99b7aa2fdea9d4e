package retrybudget

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/retrybudget/retrybudget/ledger"
)

// closeTracker is a request body that records whether it was closed.
type closeTracker struct {
	io.Reader
	closed atomic.Bool
}

func (c *closeTracker) Close() error {
	c.closed.Store(true)
	return nil
}

// A call answered from the ledger with the stored outcome of its completed
// action sends nothing, and still closes the caller's request body, as the
// RoundTripper contract asks of every RoundTrip.
func TestReplayedCallClosesTheRequestBody(t *testing.T) {
	p := newProvider(t, status(200))
	tr := New(Config{Ledger: LedgerConfig{Store: ledger.NewMemory(ledger.MemoryConfig{})}})
	ctx := WithAction(context.Background(), Action{Operation: "charge", Key: "order-1"})
	for i, want := range []bool{false, true} { // the first call sends, the second replays
		body := &closeTracker{Reader: strings.NewReader("amount=100")}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, body)
		if err != nil {
			t.Fatal(err)
		}
		// A body that can be read again, as an SDK's usually is: the
		// Transport then leaves the first one to the base transport.
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("amount=100")), nil }
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if o := finalOutcome(t, resp); o.Replayed != want {
			t.Fatalf("call %d: Replayed %v, want %v", i+1, o.Replayed, want)
		}
		if !body.closed.Load() {
			t.Fatalf("call %d (replayed %v): the request body was left open", i+1, want)
		}
	}
	if n := len(p.requests()); n != 1 {
		t.Fatalf("%d arrivals, want 1", n)
	}
}
