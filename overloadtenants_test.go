package retrybudget

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/budget"
)

// A tenant's calls may be slow by what they ask (a long generation, a
// full export), which the tenant chooses: one tenant's timeouts are
// evidence against that tenant's calls, not against another's. While
// tenant A's slow reports time out, tenant B's calls to the same host,
// which the provider answers at once, are all sent; A's own are shed.
// Once several tenants time out, the destination is shed for everyone.
func TestOverloadShedsOnlyTheTenantsThatTimeOut(t *testing.T) {
	release := make(chan struct{})
	p := newProvider(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/report" {
			return // answered at once
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	// A minute's window: the test's timing cannot age the timeouts out.
	o := budget.NewOverload(budget.OverloadConfig{Window: time.Minute})
	tr := New(Config{Base: base, Overload: o, AttemptTimeout: 30 * time.Millisecond, MaxAttempts: 1})
	var seq int
	var mu sync.Mutex
	as := func(tenant string) context.Context {
		mu.Lock()
		defer mu.Unlock()
		seq++
		return WithAction(context.Background(), Action{Tenant: tenant, Operation: "read", Key: strconv.Itoa(seq)})
	}
	slow := func(tenant string, n int) {
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				_, err := send(as(tenant), t, tr, "GET", p.URL+"/report", "")
				if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrThrottled) {
					t.Errorf("tenant %s's report: %v, want the attempt's timeout or a refusal", tenant, err)
				}
			})
		}
		wg.Wait()
	}
	// calls sends n calls of tenant to path and counts those refused.
	calls := func(tenant, path string, n int) (refused int) {
		for range n {
			resp, err := send(as(tenant), t, tr, "GET", p.URL+path, "")
			switch {
			case errors.Is(err, ErrThrottled):
				refused++
			case err == nil:
				finalOutcome(t, resp)
			case !errors.Is(err, context.DeadlineExceeded):
				t.Fatalf("tenant %s: %v", tenant, err)
			}
		}
		return refused
	}
	slow("a", 60)
	if n := calls("b", "/models", 50); n != 0 {
		t.Errorf("tenant B: %d of 50 calls refused while tenant A's reports time out, want 0", n)
	}
	if n := calls("a", "/report", 20); n == 0 {
		t.Errorf("tenant A: none of 20 calls refused after 60 of its own timed out, want some")
	}
	// Two more tenants time out: the provider's queue, not one tenant's
	// requests, is the likelier cause, and every tenant's call is shed.
	slow("c", 30)
	slow("d", 30)
	if n := calls("e", "/models", 20); n == 0 {
		t.Errorf("tenant E: none of 20 calls refused once three tenants time out, want some")
	}
}
