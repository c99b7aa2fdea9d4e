package idempotency

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger/ledgertest"
)

func TestLostReserveReplyStillRunsTheHandler(t *testing.T) {
	// A request whose Reserve reply was lost still runs its handler once.
	// Failure pinned: with a 100 ms ReadTimeout and
	// Redis frozen during the reservation, the request was refused by its
	// own reservation (409 pending), then answered 409 uncertain for good:
	// the handler ran 0 times although nothing had run.
	srv := redistest.Start(t)
	const lease = 300 * time.Millisecond
	for _, frozen := range []time.Duration{150 * time.Millisecond, 250 * time.Millisecond} {
		t.Run(frozen.String(), func(t *testing.T) {
			client := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: 100 * time.Millisecond})
			t.Cleanup(func() { client.Close() })
			if err := client.Ping(t.Context()).Err(); err != nil {
				t.Fatal(err)
			}
			store := ledgertest.Redis(t, client, redistest.Prefix(t))
			var runs atomic.Int32
			h := New(Config{Store: store, Tenant: testTenant, Lease: lease})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs.Add(1)
				w.WriteHeader(http.StatusCreated)
			}))
			serve := func() *http.Response {
				req := httptest.NewRequest("POST", "/charges", strings.NewReader(`{"amount":1}`))
				req.Header.Set("Idempotency-Key", "k-frozen")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				return rec.Result()
			}

			thaw := srv.Freeze(t)
			time.AfterFunc(frozen, thaw) // the fault: Redis hangs this long
			resp := serve()
			// A client that follows the answers: 503 and 409 pending
			// come with a Retry-After it honours; at most a few leases.
			deadline := time.Now().Add(10 * lease)
			var seen []int
			for resp.StatusCode != http.StatusCreated && time.Now().Before(deadline) {
				seen = append(seen, resp.StatusCode)
				if resp.StatusCode != http.StatusConflict && resp.StatusCode != http.StatusServiceUnavailable {
					break
				}
				wait := 50 * time.Millisecond
				if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s == 0 {
					wait = 10 * time.Millisecond
				}
				time.Sleep(wait) // the client's pause between polls, not synchronisation
				resp = serve()
			}
			if resp.StatusCode != http.StatusCreated || runs.Load() != 1 {
				t.Fatalf("answers %v then %d, handler ran %d times; want 201 with one run", seen, resp.StatusCode, runs.Load())
			}
			t.Logf("answers before 201: %v", seen)
		})
	}
}
