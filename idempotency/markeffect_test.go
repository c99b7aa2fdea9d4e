package idempotency_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/idempotency"
	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/ledgertest"
)

// deadServer is the store as a server that died sees it: its lease
// renewals no longer arrive.
type deadServer struct{ ledger.Store }

func (deadServer) Renew(context.Context, ledger.Key, int64, time.Duration) error { return nil }

// Without Config.Atomic, MarkEffect keeps its promise with no write of its
// own: the record says the handler started before it runs, so a server
// that dies after the handler marked and did its effect leaves the action
// uncertain, in the Memory and the Redis store alike, and the client's
// retry on another server is answered 409 TypeUncertain without running
// the handler. One charge.
func TestMarkedEffectOfADeadServerIsUncertain(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lease time.Duration
		store func(t *testing.T) (ledger.Store, func(time.Duration))
	}{
		{name: "memory", lease: time.Minute, store: func(t *testing.T) (ledger.Store, func(time.Duration)) {
			clock := newFakeClock()
			return ledger.NewMemory(ledger.MemoryConfig{Now: clock.Now}), clock.Advance
		}},
		{name: "redis", lease: 300 * time.Millisecond, store: func(t *testing.T) (ledger.Store, func(time.Duration)) {
			return ledgertest.Redis(t, redistest.Client(t), redistest.Prefix(t)), nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, advance := tc.store(t)
			var charges atomic.Int32
			charged, release := make(chan struct{}), make(chan struct{})
			defer close(release)
			serve := func(s ledger.Store) *httptest.Server {
				mw := idempotency.New(idempotency.Config{Store: s, Tenant: testTenant, Lease: tc.lease})
				srv := httptest.NewServer(mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if err := idempotency.MarkEffect(r.Context()); err != nil {
						w.WriteHeader(http.StatusServiceUnavailable)
						return
					}
					if charges.Add(1) == 1 {
						close(charged)
						<-release // the server is dead from here on
					}
					w.WriteHeader(http.StatusCreated)
				})))
				t.Cleanup(srv.Close)
				return srv
			}
			dead, other := serve(deadServer{store}), serve(store)
			go post(dead.URL, "k1", `{"n":1}`)
			<-charged
			var a answer
			if advance != nil {
				advance(tc.lease + time.Second)
				a = post(other.URL, "k1", `{"n":1}`)
			} else {
				ledgertest.Poll(t, "the dead server's lease to run out", func() bool {
					a = post(other.URL, "k1", `{"n":1}`)
					return !strings.Contains(a.body, idempotency.TypePending)
				})
			}
			if n := charges.Load(); n != 1 {
				t.Fatalf("%d charges, want 1 (the retry answered %d %s)", n, a.status, a.body)
			}
			if a.status != http.StatusConflict || !strings.Contains(a.body, idempotency.TypeUncertain) {
				t.Fatalf("retry answered %d %s; want 409 TypeUncertain", a.status, a.body)
			}
		})
	}
}
