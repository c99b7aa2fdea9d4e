package idempotency

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// Lease renewal of an inbound action: each test is named after the rule it
// pins.

// testTenant is the tenant of these tests' requests.
func testTenant(*http.Request) string { return "acme" }

// hungRenewals is a store whose renewals hang, whatever their context
// says, until release is closed; entered receives one value per renewal.
type hungRenewals struct {
	*ledger.Memory
	entered chan struct{}
	release chan struct{}
}

func (h *hungRenewals) Renew(context.Context, ledger.Key, int64, time.Duration) error {
	select {
	case h.entered <- struct{}{}:
	default:
	}
	<-h.release
	return nil
}

func TestHungRenewalDoesNotHoldTheResponse(t *testing.T) {
	// A hung renewal never holds the response. Failure pinned: KeepLease
	// ran renewals on a context
	// without deadline and stopKeeper waited for the one in flight, so a
	// store that hung on a renewal held the response for as long.
	s := &hungRenewals{Memory: ledger.NewMemory(ledger.MemoryConfig{}),
		entered: make(chan struct{}, 1), release: make(chan struct{})}
	t.Cleanup(func() { close(s.release) })
	mw := New(Config{Store: s, Tenant: testTenant, Lease: 30 * time.Millisecond})
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-s.entered // a renewal is hanging now
		w.WriteHeader(http.StatusCreated)
	}))
	done := make(chan int)
	go func() { done <- serveKeyed(t, h, "k-hung").StatusCode }()
	select {
	case code := <-done:
		if code != http.StatusCreated {
			t.Fatalf("status %d; want 201", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no response 10s after the handler returned: the hung renewal holds it")
	}
}
