package integrations_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/integrations"
)

// TestBindGivesAContextlessCallItsActionAndDeadline: a request made with
// no context (as twilio-go makes every request) goes out under the bound
// context: with its Action's key, and its deadline ends a Retry-After wait
// that cannot fit at once, reported through CaptureOutcome.
func TestBindGivesAContextlessCallItsActionAndDeadline(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		w.Header().Set("Retry-After", "5")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	a := retrybudget.Action{Operation: "sms", Key: "1"}
	ctx, cancel := context.WithTimeout(retrybudget.WithAction(context.Background(), a), time.Second)
	defer cancel()
	ctx, out := retrybudget.CaptureOutcome(ctx)
	rt := integrations.Bind(ctx, retrybudget.New(retrybudget.Config{Base: srv.Client().Transport}))
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("x")) // no context
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	o, _ := out.Last()
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 1 || keys[0] != a.IdempotencyKey() || !errors.Is(o.Reason, retrybudget.ErrDeadline) {
		t.Fatalf("keys %q, outcome %+v; want one send under the Action's key, then ErrDeadline", keys, o)
	}
}
