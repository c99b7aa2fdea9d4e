package presets_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/presets"
)

// TestStripeUnsavedAnswers: an answer Stripe saves no idempotent result
// for (a validation failure, its own concurrent-request 409s, a 429) is
// recorded as failed without effect, so the corrected request under the
// same Action reaches Stripe under the same key; an answer Stripe saves (a
// decline, a key reused with other parameters) stays the action's, and a
// changed request is refused unsent.
func TestStripeUnsavedAnswers(t *testing.T) {
	const json = "application/json"
	tests := []struct {
		name     string
		answer   reply
		attempts int  // the first call's
		unsaved  bool // the corrected request is sent
	}{
		{"400 invalid_request_error", reply{status: 400, header: []string{"Content-Type", json},
			body: `{"error":{"type":"invalid_request_error","code":"parameter_missing","param":"currency"}}`}, 1, true},
		{"409 idempotency_key_in_use", reply{status: 409, header: []string{"Content-Type", json},
			body: `{"error":{"type":"invalid_request_error","code":"idempotency_key_in_use"}}`}, 3, true},
		{"409 lock_timeout", reply{status: 409, header: []string{"Content-Type", json},
			body: `{"error":{"type":"invalid_request_error","code":"lock_timeout"}}`}, 3, true},
		{"429", reply{status: 429, header: []string{"Content-Type", json},
			body: `{"error":{"type":"invalid_request_error","code":"rate_limit"}}`}, 3, true},
		{"400 idempotency_error", reply{status: 400, header: []string{"Content-Type", json},
			body: `{"error":{"type":"idempotency_error"}}`}, 1, false},
		{"402 card_error", reply{status: 402, header: []string{"Content-Type", json},
			body: `{"error":{"type":"card_error","code":"card_declined"}}`}, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			replies := make([]reply, 0, tt.attempts+1)
			for range tt.attempts {
				replies = append(replies, tt.answer)
			}
			f := newFake(t, append(replies, reply{status: 200, header: []string{"Content-Type", json}, body: `{"id":"pi_1"}`})...)
			c := client(t, f, presets.Stripe(), nil, func(cfg *retrybudget.Config) {
				cfg.Ledger.Store = ledger.NewMemory(ledger.MemoryConfig{})
			})
			ctx := retrybudget.WithAction(context.Background(), retrybudget.Action{Operation: "pay", Key: "order-1"})
			status, out := postStripe(t, ctx, c, "amount=100")
			if status != tt.answer.status || out.Attempts != tt.attempts || out.MaybeApplied {
				t.Fatalf("first call: status %d, %d attempts, maybe applied %v; want %d, %d, false",
					status, out.Attempts, out.MaybeApplied, tt.answer.status, tt.attempts)
			}
			status, out = postStripe(t, ctx, c, "amount=100&currency=usd")
			sent := f.requests()[tt.attempts:]
			t.Logf("corrected request: status %d, reason %v, %d arrivals", status, out.Reason, len(sent))
			if !tt.unsaved {
				if len(sent) != 0 || !errors.Is(out.Reason, retrybudget.ErrConflict) {
					t.Fatalf("corrected request after a saved answer: %d arrivals, reason %v; want 0, ErrConflict", len(sent), out.Reason)
				}
				return
			}
			first := f.requests()[0].header.Get("Idempotency-Key")
			if status != 200 || len(sent) != 1 || sent[0].header.Get("Idempotency-Key") != first {
				t.Fatalf("corrected request: status %d, %d arrivals; want 200 from one arrival under key %q", status, len(sent), first)
			}
		})
	}
}

// postStripe posts a form body to Stripe's PaymentIntents and returns the
// status (0 without a response) and the Outcome.
func postStripe(t *testing.T, ctx context.Context, c *http.Client, form string) (int, retrybudget.Outcome) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.stripe.com/v1/payment_intents", strings.NewReader(form))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.Do(req)
	if err != nil {
		var e *retrybudget.Error
		if !errors.As(err, &e) {
			t.Fatal(err)
		}
		return 0, e.Outcome
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	out, _ := retrybudget.OutcomeOf(resp)
	return resp.StatusCode, out
}
