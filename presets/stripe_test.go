package presets_test

import (
	"context"
	"errors"
	"testing"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/presets"
)

const stripeCharges = "https://api.stripe.com/v1/charges"

func TestStripeShouldRetry(t *testing.T) {
	tests := []struct {
		name     string
		first    reply
		attempts int
		reason   error
		class    retrybudget.Class
	}{
		{"should-retry false stops a 500", reply{status: 500, header: []string{"Stripe-Should-Retry", "false"}},
			1, retrybudget.ErrRejected, retrybudget.ClassServer},
		{"should-retry false stops a 429", reply{status: 429, header: []string{"Stripe-Should-Retry", "false"}},
			1, retrybudget.ErrRejected, retrybudget.ClassCapacity},
		{"should-retry true repeats a 409", reply{status: 409, header: []string{"Stripe-Should-Retry", "true"}},
			2, nil, retrybudget.ClassSuccess},
		{"should-retry is case-insensitive", reply{status: 409, header: []string{"Stripe-Should-Retry", " TRUE "}},
			2, nil, retrybudget.ClassSuccess},
		{"a keyed 409 without the header is retried under the key", reply{status: 409},
			2, nil, retrybudget.ClassSuccess},
		{"a 500 without the header is retried under the key", reply{status: 500},
			2, nil, retrybudget.ClassSuccess},
		{"a 429 is retried", reply{status: 429}, 2, nil, retrybudget.ClassSuccess},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.first, reply{status: 200, body: `{"id":"ch_1"}`})
			c := client(t, f, presets.Stripe(), nil, nil)
			_, _, out := call(t.Context(), t, c, "POST", stripeCharges)
			if out.Attempts != tt.attempts || !errors.Is(out.Reason, tt.reason) || out.Class != tt.class {
				t.Fatalf("attempts %d, reason %v, class %v; want %d, %v, %v",
					out.Attempts, out.Reason, out.Class, tt.attempts, tt.reason, tt.class)
			}
		})
	}
}

func TestStripeKeyIsHonouredAcrossAttempts(t *testing.T) {
	f := newFake(t, reply{status: 500}, reply{status: 502}, reply{status: 200})
	c := client(t, f, presets.Stripe(), nil, nil)
	resp, _, out := call(t.Context(), t, c, "POST", stripeCharges)
	if resp.StatusCode != 200 || out.Attempts != 3 {
		t.Fatalf("status %d after %d attempts; want 200 after 3 (Stripe's preset allows 3)", resp.StatusCode, out.Attempts)
	}
	reqs := f.requests()
	key := reqs[0].header.Get("Idempotency-Key")
	if key == "" || key != out.Key {
		t.Fatalf("first attempt key %q, outcome key %q; want a generated key", key, out.Key)
	}
	for i, r := range reqs {
		if r.header.Get("Idempotency-Key") != key || r.host != "api.stripe.com" {
			t.Fatalf("attempt %d: key %q host %q; want the same key to api.stripe.com", i+1, r.header.Get("Idempotency-Key"), r.host)
		}
	}
}

func TestStripeGivesUpAfterThreeAttempts(t *testing.T) {
	f := newFake(t, reply{status: 503})
	c := client(t, f, presets.Stripe(), nil, nil)
	ctx := retrybudget.WithAction(context.Background(), retrybudget.Action{Tenant: "acme", Operation: "charge", Key: "o-1"})
	_, _, out := call(ctx, t, c, "POST", stripeCharges)
	if out.Attempts != 3 || !errors.Is(out.Reason, retrybudget.ErrAttemptsExhausted) || out.Class != retrybudget.ClassCapacity {
		t.Fatalf("attempts %d, reason %v, class %v; want 3, attempts exhausted, capacity", out.Attempts, out.Reason, out.Class)
	}
}
