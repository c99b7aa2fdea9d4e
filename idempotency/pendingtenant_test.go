package idempotency_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/idempotency"
	"github.com/retrybudget/retrybudget/ledger"
)

// The Retry-After of a 409 TypePending comes from how long the tenant's own
// runs of the operation take: another tenant's slow runs of the same
// operation (a slow account, or one that makes its requests slow on
// purpose) do not tell the victim to wait longer than its own 0.3 s
// requests take.
func TestPendingRetryAfterIsTheTenantsOwn(t *testing.T) {
	clock := newFakeClock()
	store := ledger.NewMemory(ledger.MemoryConfig{Now: clock.Now})
	started, release := make(chan struct{}), make(chan struct{})
	e := newEnv(t, idempotency.Config{Store: store, Now: clock.Now}, func(run int, w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("X-Block") != "":
			close(started)
			<-release
		case r.Header.Get("X-Tenant") == "slow":
			clock.Advance(5 * time.Second) // the handler's run time
		default:
			clock.Advance(300 * time.Millisecond)
		}
		created(run, w, r)
	})
	send := func(tenant, key string, block bool) response {
		h := http.Header{"X-Tenant": {tenant}}
		if block {
			h.Set("X-Block", "1")
		}
		return e.send(request{keys: []string{key}, header: h})
	}
	for i := range 3 {
		send("victim", "v"+string(rune('0'+i)), false)
	}
	for i := range 8 {
		send("slow", "s"+string(rune('0'+i)), false)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		send("victim", "running", true)
	}()
	<-started
	res := send("victim", "running", false)
	close(release)
	<-done
	if res.Code != http.StatusConflict || problemBody(t, res).Type != idempotency.TypePending {
		t.Fatalf("duplicate answered %d %s; want 409 TypePending", res.Code, res.Body)
	}
	if got := res.Header().Get("Retry-After"); got != "1" {
		t.Fatalf("Retry-After %q for a 0.3 s operation; want 1 (the victim's own runs, not the slow tenant's)", got)
	}
}
