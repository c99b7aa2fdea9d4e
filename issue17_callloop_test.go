package retrybudget

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/ledgertest"
)

// Regression tests for the call-loop items of issue 17, each named after
// the bug it pins.

func TestSettleHonoursTheDeadlineWhenRedisFreezes(t *testing.T) {
	// Regression (issue 17 item 5): Complete and Fail ran under
	// context.WithoutCancel with no timeout, so with Redis frozen after
	// Reserve a call with a 300 ms deadline came back after 5.33 s,
	// though the provider had answered.
	const deadline = 300 * time.Millisecond
	const slack = 250 * time.Millisecond
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { client.Close() })
	store := ledgertest.Redis(t, client, redistest.Prefix(t))
	for _, tc := range []struct {
		name string
		cfg  Config
		ctx  bool // the deadline is the context's, else Config.Deadline
	}{
		{"context deadline", Config{Ledger: LedgerConfig{Store: store}}, true},
		{"Config.Deadline", Config{Ledger: LedgerConfig{Store: store}, Deadline: deadline}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var effects atomic.Int32
			thaws := make(chan func(), 1)
			provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				effects.Add(1)
				thaws <- srv.Freeze(t) // the fault: Redis hangs once the action is reserved
				w.WriteHeader(http.StatusCreated)
			}))
			t.Cleanup(provider.Close)
			ctx := WithAction(context.Background(), Action{Tenant: "acme", Operation: "charge", Key: tc.name})
			if tc.ctx {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, deadline)
				defer cancel()
			}
			start := time.Now()
			resp, err := send(ctx, t, New(tc.cfg), "POST", provider.URL, "x")
			elapsed := time.Since(start)
			select {
			case thaw := <-thaws:
				thaw()
			default:
			}
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated || effects.Load() != 1 {
				t.Fatalf("status %d, effects %d; want the provider's 201, one effect", resp.StatusCode, effects.Load())
			}
			if elapsed > deadline+slack {
				t.Fatalf("RoundTrip took %v with a %v deadline; settling must not hold it past the deadline", elapsed, deadline)
			}
		})
	}
}

// hangingStore is a Store whose writes after Reserve wait on their
// context, as a store blocked on a hung connection does.
type hangingStore struct{ ledger.Store }

func (hangingStore) AddAttempt(ctx context.Context, _ ledger.Key, _ int64, _ string) (ledger.Attempt, error) {
	<-ctx.Done()
	return ledger.Attempt{}, ctx.Err()
}

func (hangingStore) Complete(ctx context.Context, _ ledger.Key, _ int64, _ ledger.Outcome) error {
	<-ctx.Done()
	return ctx.Err()
}

func (hangingStore) Fail(ctx context.Context, _ ledger.Key, _ int64, _ ledger.Failure) error {
	<-ctx.Done()
	return ctx.Err()
}

func TestSettleHonoursTheDeadlineWithAStoreThatWaitsOnItsContext(t *testing.T) {
	// Regression (issue 17 item 5): settling ran under a context that
	// never ends, so a store waiting on it never let RoundTrip return.
	const deadline, slack = 200 * time.Millisecond, 250 * time.Millisecond
	p := newPayments(t, true)
	store := hangingStore{ledger.NewMemory(ledger.MemoryConfig{})}
	tr := New(Config{Ledger: LedgerConfig{Store: store}, Deadline: deadline})
	start := time.Now()
	resp, err := chargeTo(t, tr, p.URL, order, "x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if elapsed := time.Since(start); elapsed > deadline+slack {
		t.Fatalf("RoundTrip took %v with a %v deadline", elapsed, deadline)
	}
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("status %d; want the provider's 201", resp.StatusCode)
	}
}
