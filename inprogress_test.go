package retrybudget_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/budget"
)

// refusingBudget refuses every retry.
type refusingBudget struct{ asked atomic.Int32 }

func (*refusingBudget) Deposit(context.Context, string) {}
func (b *refusingBudget) Withdraw(context.Context, string) budget.Decision {
	b.asked.Add(1)
	return budget.Decision{}
}

// A keyed 409 says the provider holds the request under that key and is
// still working on it: asking again reads its answer, it redoes nothing,
// so it does not spend the retry budget. A 503 on the same call still does.
func TestKeyedInProgressDoesNotSpendTheBudget(t *testing.T) {
	var arrivals atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if arrivals.Add(1) < 3 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusConflict)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	b := &refusingBudget{}
	tr := retrybudget.New(retrybudget.Config{Base: srv.Client().Transport, Budget: b, KeysHonoured: true,
		BaseDelay: time.Millisecond, MaxDelay: time.Millisecond})
	ctx := retrybudget.WithAction(context.Background(), retrybudget.Action{Tenant: "t", Operation: "charge", Key: "o-1"})
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL, strings.NewReader(`{}`))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || arrivals.Load() != 3 || b.asked.Load() != 0 {
		t.Fatalf("status %d after %d arrivals, budget asked %d times; want 201 after 3, budget never asked",
			resp.StatusCode, arrivals.Load(), b.asked.Load())
	}

	// The same refusing budget stops a retry after a 503.
	srv503 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv503.Close()
	tr = retrybudget.New(retrybudget.Config{Base: srv503.Client().Transport, Budget: b, KeysHonoured: true})
	req, _ = http.NewRequestWithContext(ctx, "POST", srv503.URL, strings.NewReader(`{}`))
	resp, err = tr.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
	}
	if step, o := retrybudget.Next(resp, err); step != retrybudget.StepRetry || o.Reason != retrybudget.ErrBudgetExhausted {
		t.Fatalf("503: %v %v; want a retry later, ErrBudgetExhausted", step, o.Reason)
	}
}
