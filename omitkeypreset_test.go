package retrybudget_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/presets"
)

// Twilio documents no idempotency key for sending a message: a caller's
// Idempotency-Key does not make a message POST that got a 500 repeatable,
// since Twilio would send the SMS again.
func TestTwilioMessageWithACallersKeyIsNotRepeated(t *testing.T) {
	var arrivals atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrivals.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	tr := retrybudget.New(retrybudget.Config{Routes: []retrybudget.Route{presets.Twilio().At(srv.URL)}})
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost,
		srv.URL+"/2010-04-01/Accounts/AC1/Messages.json", strings.NewReader("To=%2B15550001&Body=hi"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Idempotency-Key", "caller-key-1")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	o, _ := retrybudget.OutcomeOf(resp)
	if n := arrivals.Load(); n != 1 || !errors.Is(o.Reason, retrybudget.ErrUncertain) {
		t.Fatalf("%d arrivals, outcome %+v; want 1 and ErrUncertain", n, o)
	}
}
