package idempotency

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// oneTenant puts every request of these tests in one tenant.
func oneTenant(*http.Request) string { return "acct_1" }

// serveKeyed sends a POST with key through h and returns the response.
func serveKeyed(t *testing.T, h http.Handler, key string) *http.Response {
	t.Helper()
	req := httptest.NewRequest("POST", "/charges", strings.NewReader(`{"amount":1}`))
	req.Header.Set("Idempotency-Key", key)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

// Regression: header changes made after WriteHeader were sent and stored,
// where net/http drops them; so a replay differed from what net/http
// itself would have sent.
func TestHeadersAfterWriteHeaderAreDropped(t *testing.T) {
	mw := New(Config{Tenant: oneTenant, Store: ledger.NewMemory(ledger.MemoryConfig{})})
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "/charges/1")
		w.WriteHeader(201)
		w.Header().Set("Location", "/late")
		w.Header().Set("X-Late", "1")
		io.WriteString(w, "ok")
	}))
	for i, want := range []string{"", "true"} {
		resp := serveKeyed(t, h, "k-1")
		if resp.Header.Get("Location") != "/charges/1" || resp.Header.Get("X-Late") != "" || resp.Header.Get(HeaderReplayed) != want {
			t.Fatalf("response %d: headers %v; want Location /charges/1, no X-Late, replayed %q", i, resp.Header, want)
		}
	}
}

// Regression: a replay carried the first request's X-Request-Id, set by an
// outer middleware, over the new request's own.
func TestReplayKeepsTheOuterMiddlewaresHeaders(t *testing.T) {
	n := 0
	mw := New(Config{Tenant: oneTenant, Store: ledger.NewMemory(ledger.MemoryConfig{})})
	inner := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(201)
	}))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		w.Header().Set("X-Request-Id", "req-"+string(rune('0'+n)))
		inner.ServeHTTP(w, r)
	})
	serveKeyed(t, h, "k-1")
	resp := serveKeyed(t, h, "k-1")
	if resp.Header.Get("X-Request-Id") != "req-2" || resp.Header.Get(HeaderReplayed) != "true" {
		t.Fatalf("replay headers %v; want this request's X-Request-Id req-2", resp.Header)
	}
}

func TestTrailersReachTheClient(t *testing.T) {
	mw := New(Config{Tenant: oneTenant, Store: ledger.NewMemory(ledger.MemoryConfig{})})
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Sum")
		w.WriteHeader(200)
		io.WriteString(w, "body")
		w.Header().Set("X-Sum", "abc")
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL, strings.NewReader("x"))
	req.Header.Set("Idempotency-Key", "k-t")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Trailer.Get("X-Sum") != "abc" || resp.Header.Get("X-Sum") != "" {
		t.Fatalf("trailer %v header %v; want X-Sum only as a trailer", resp.Trailer, resp.Header)
	}
}

// lostStore loses every lease renewal to another owner.
type lostStore struct{ *ledger.Memory }

func (lostStore) Renew(context.Context, ledger.Key, int64, time.Duration) error {
	return ledger.ErrNotOwner
}

// Regression: a handler whose lease was taken over went on with a live
// context, racing the new owner.
func TestHandlerContextEndsWhenTheLeaseIsLost(t *testing.T) {
	mw := New(Config{Tenant: oneTenant, Store: lostStore{ledger.NewMemory(ledger.MemoryConfig{})}, Lease: 3 * time.Millisecond})
	var err error
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			err = r.Context().Err()
		case <-time.After(5 * time.Second):
		}
		w.WriteHeader(503)
	}))
	serveKeyed(t, h, "k-lost")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("handler context ended with %v; want canceled when the lease was lost", err)
	}
}

// Regression: methods were matched case-sensitively, so "post" passed
// through unguarded.
func TestMethodsMatchWhateverTheirCase(t *testing.T) {
	runs := 0
	mw := New(Config{Tenant: oneTenant, Store: ledger.NewMemory(ledger.MemoryConfig{})})
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { runs++; w.WriteHeader(201) }))
	for range 2 {
		req := httptest.NewRequest("post", "/charges", strings.NewReader("x"))
		req.Header.Set("Idempotency-Key", "k-case")
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	if runs != 1 {
		t.Fatalf("handler ran %d times for one key; want 1", runs)
	}
}
