package retrybudget

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/limiter"
)

// countingStore counts the calls a Transport makes to a ledger.Store, one
// round trip each for the Redis and PostgreSQL stores.
type countingStore struct {
	ledger.Store
	mu    sync.Mutex // guards calls
	calls []string
}

// made returns the calls made so far, in order, space-separated.
func (s *countingStore) made() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.calls, " ")
}

// postCharge sends a keyed POST under acme's charge action key through tr
// and reads the answer.
func postCharge(t *testing.T, tr http.RoundTripper, key string) {
	t.Helper()
	act := Action{Tenant: "acme", Operation: "charge", Key: key}
	req, _ := http.NewRequestWithContext(WithAction(context.Background(), act), http.MethodPost,
		"http://api.example/v1/charges", strings.NewReader(`{"amount":1999}`))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

func (s *countingStore) count(op string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, op)
}

func (s *countingStore) Reserve(ctx context.Context, req ledger.ReserveRequest) (ledger.Reservation, error) {
	s.count("Reserve")
	return s.Store.Reserve(ctx, req)
}

func (s *countingStore) MarkSending(ctx context.Context, k ledger.Key, token int64) error {
	s.count("MarkSending")
	return s.Store.MarkSending(ctx, k, token)
}

func (s *countingStore) AddAttempt(ctx context.Context, k ledger.Key, token int64, class string) (ledger.Attempt, error) {
	s.count("AddAttempt")
	return s.Store.AddAttempt(ctx, k, token, class)
}

func (s *countingStore) Complete(ctx context.Context, k ledger.Key, token int64, o ledger.Outcome) error {
	s.count("Complete")
	return s.Store.Complete(ctx, k, token, o)
}

func (s *countingStore) Fail(ctx context.Context, k ledger.Key, token int64, f ledger.Failure) error {
	s.count("Fail")
	return s.Store.Fail(ctx, k, token, f)
}

func (s *countingStore) Renew(ctx context.Context, k ledger.Key, token int64, lease time.Duration) error {
	s.count("Renew")
	return s.Store.Renew(ctx, k, token, lease)
}

func (s *countingStore) Get(ctx context.Context, k ledger.Key) (ledger.Record, error) {
	s.count("Get")
	return s.Store.Get(ctx, k)
}

// unfoldingStore is a store written before the folded writes: it knows
// neither ReserveRequest.Sending nor the AttemptClass fields, and says so
// by leaving the Reservation's flags false.
type unfoldingStore struct{ ledger.Store }

func (s unfoldingStore) Reserve(ctx context.Context, req ledger.ReserveRequest) (ledger.Reservation, error) {
	req.Sending = false
	res, err := s.Store.Reserve(ctx, req)
	res.Sending, res.SettlesAttempt = false, false
	return res, err
}

func (s unfoldingStore) Complete(ctx context.Context, k ledger.Key, token int64, o ledger.Outcome) error {
	o.AttemptClass = ""
	return s.Store.Complete(ctx, k, token, o)
}

func (s unfoldingStore) Fail(ctx context.Context, k ledger.Key, token int64, f ledger.Failure) error {
	f.AttemptClass = ""
	return s.Store.Fail(ctx, k, token, f)
}

// TestStoreRoundTripsPerAction counts the store calls of one successful
// keyed POST under an Action: the grant carries the mark and the outcome
// the send where the key is honoured (2), the mark is a write of its own
// before the send where it is not (3), and a store that knows neither
// fold gets the four writes it always had, its history complete.
func TestStoreRoundTripsPerAction(t *testing.T) {
	for _, tc := range []struct {
		name      string
		honoured  bool
		unfolding bool
		want      string
	}{
		{"key honoured", true, false, "Reserve Complete"},
		{"key not honoured", false, false, "Reserve MarkSending Complete"},
		{"store without the folds", true, true, "Reserve MarkSending AddAttempt Complete"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := ledger.NewMemory(ledger.MemoryConfig{})
			var inner ledger.Store = mem
			if tc.unfolding {
				inner = unfoldingStore{mem}
			}
			store := &countingStore{Store: inner}
			tr := New(Config{Base: canned{}, KeysHonoured: tc.honoured, Ledger: LedgerConfig{Store: store}})
			postCharge(t, tr, "order-1")
			got := store.made()
			if got != tc.want {
				t.Fatalf("store calls %q; want %q", got, tc.want)
			}
			rec, err := mem.Get(context.Background(), ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-1"})
			if err != nil {
				t.Fatal(err)
			}
			if rec.State != ledger.StateCompleted || !rec.Sending || len(rec.Attempts) != 2 || rec.Attempts[1].Class != ClassSuccess.String() {
				t.Fatalf("record %s, sending %v, history %+v; want completed, marked, the grant then the success", rec.State, rec.Sending, rec.Attempts)
			}
		})
	}
}

// unavailableOnce answers 503 to its first request and 200 after.
type unavailableOnce struct {
	mu   sync.Mutex // guards sent
	sent int
}

func (u *unavailableOnce) RoundTrip(req *http.Request) (*http.Response, error) {
	u.mu.Lock()
	u.sent++
	n := u.sent
	u.mu.Unlock()
	resp, err := canned{}.RoundTrip(req)
	if n == 1 {
		resp.StatusCode, resp.Status = http.StatusServiceUnavailable, "503 Service Unavailable"
	}
	return resp, err
}

// TestStoreRoundTripsPerActionWithARetry: a send followed by a retry is
// recorded on its own, fenced, and the retry is marked right before it
// leaves; the last send still rides with the outcome.
func TestStoreRoundTripsPerActionWithARetry(t *testing.T) {
	mem := ledger.NewMemory(ledger.MemoryConfig{})
	store := &countingStore{Store: mem}
	tr, _ := newFakeTransport(Config{Base: &unavailableOnce{}, KeysHonoured: true, Ledger: LedgerConfig{Store: store}})
	postCharge(t, tr, "order-1")
	got := store.made()
	if want := "Reserve AddAttempt MarkSending Complete"; got != want {
		t.Fatalf("store calls %q; want %q", got, want)
	}
	rec, err := mem.Get(context.Background(), ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Attempts) != 3 || rec.Attempts[1].Class != ClassCapacity.String() || rec.Attempts[2].Class != ClassSuccess.String() {
		t.Fatalf("history %+v; want the grant, the 503, the success", rec.Attempts)
	}
}

// TestStoreRoundTripsPerActionWithALimiter: the mark the grant carries
// stands where the limiter admits the call at once, and is written again
// right before the send where the limiter made the call wait (a refusal
// slept out, or a wait inside Allow): a takeover during the wait must
// refuse that mark (TestTwoLiveWorkersSharingAnOwnerNameSendOnceAndReportIt).
func TestStoreRoundTripsPerActionWithALimiter(t *testing.T) {
	for _, tc := range []struct {
		name      string
		decisions []limiter.Decision
		want      string
	}{
		{"admitted at once", []limiter.Decision{allow}, "Reserve Complete"},
		{"refused, then admitted", []limiter.Decision{{RetryAfter: time.Second}, allow}, "Reserve MarkSending Complete"},
		{"admitted after a wait inside Allow", []limiter.Decision{{Allowed: true, Waited: time.Second}}, "Reserve MarkSending Complete"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &countingStore{Store: ledger.NewMemory(ledger.MemoryConfig{})}
			tr, _ := newFakeTransport(Config{Base: canned{}, KeysHonoured: true, Limiter: &scriptedLimiter{decisions: tc.decisions},
				Ledger: LedgerConfig{Store: store}})
			postCharge(t, tr, "order-1")
			if got := store.made(); got != tc.want {
				t.Fatalf("store calls %q; want %q", got, tc.want)
			}
		})
	}
}
