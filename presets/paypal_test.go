package presets_test

import (
	"errors"
	"testing"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/presets"
)

const paypalCapture = "https://api-m.paypal.com/v2/payments/authorizations/0VF52814937998046/capture"

func TestPayPalRequestIDAcrossRetries(t *testing.T) {
	f := newFake(t, reply{status: 500}, reply{status: 503}, reply{status: 201, body: `{"status":"COMPLETED"}`})
	c := client(t, f, presets.PayPal(), nil, nil)
	resp, body, out := call(t.Context(), t, c, "POST", paypalCapture)
	if resp.StatusCode != 201 || out.Attempts != 3 || out.Reason != nil || body != `{"status":"COMPLETED"}` {
		t.Fatalf("status %d, attempts %d, reason %v, body %q; want 201 after 3 attempts", resp.StatusCode, out.Attempts, out.Reason, body)
	}
	reqs := f.requests()
	id := reqs[0].header.Get("PayPal-Request-Id")
	if id == "" || id != out.Key {
		t.Fatalf("PayPal-Request-Id %q, outcome key %q; want the generated key in PayPal's header", id, out.Key)
	}
	for i, r := range reqs {
		if r.header.Get("PayPal-Request-Id") != id || r.header.Get("Idempotency-Key") != "" {
			t.Fatalf("attempt %d: PayPal-Request-Id %q, Idempotency-Key %q; want the same id and no other key header",
				i+1, r.header.Get("PayPal-Request-Id"), r.header.Get("Idempotency-Key"))
		}
	}
}

func TestPayPalCallerKeyIsKept(t *testing.T) {
	f := newFake(t, reply{status: 500}, reply{status: 201})
	c := client(t, f, presets.PayPal(), nil, nil)
	_, _, out := call(t.Context(), t, c, "POST", paypalCapture, "PayPal-Request-Id", "order-7-capture")
	if out.Attempts != 2 || out.Key != "order-7-capture" {
		t.Fatalf("attempts %d, key %q; want 2 attempts under the caller's id", out.Attempts, out.Key)
	}
	for _, r := range f.requests() {
		if got := r.header.Get("PayPal-Request-Id"); got != "order-7-capture" {
			t.Fatalf("sent id %q; want the caller's", got)
		}
	}
}

func TestPayPalBusinessAnswerIsNotRetried(t *testing.T) {
	f := newFake(t, reply{status: 422, header: []string{"Content-Type", "application/json"}, body: `{"name":"UNPROCESSABLE_ENTITY"}`})
	c := client(t, f, presets.PayPal(), nil, nil)
	_, body, out := call(t.Context(), t, c, "POST", paypalCapture)
	if out.Attempts != 1 || !errors.Is(out.Reason, retrybudget.ErrRejected) || body != `{"name":"UNPROCESSABLE_ENTITY"}` {
		t.Fatalf("attempts %d, reason %v, body %q; want one rejected attempt with its body", out.Attempts, out.Reason, body)
	}
}
