package presets_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/internal/fakeclock"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/presets"
)

// TestPayPalLedgerResendsOnlyWithinKeyRetention records an action whose
// three attempts got 500 (uncertain: PayPal may have applied it), then runs
// it again later. Within the API's PayPal-Request-Id window the ledger
// re-sends it under its id, which PayPal deduplicates; past the window PayPal
// has forgotten the id, so a re-send would be a second order or charge, and
// the action is reported uncertain without a request.
func TestPayPalLedgerResendsOnlyWithinKeyRetention(t *testing.T) {
	for _, c := range []struct {
		name, path string
		window     time.Duration
	}{
		{"orders create", "/v2/checkout/orders", presets.PayPalOrdersKeyRetention},
		{"order capture", "/v2/checkout/orders/5O190127TN364715T/capture", presets.PayPalOrdersKeyRetention},
		{"vault token", "/v3/vault/payment-tokens", presets.PayPalVaultKeyRetention},
		{"subscription", "/v1/billing/subscriptions", presets.PayPalSubscriptionsKeyRetention},
		{"refund", "/v2/payments/captures/2GG279541U471931P/refund", presets.PayPalPaymentsKeyRetention},
		{"unnamed API", "/v1/invoicing/invoices", presets.PayPalVaultKeyRetention},
	} {
		for _, later := range []struct {
			after    time.Duration
			arrivals int
		}{{c.window - time.Minute, 1}, {c.window + time.Minute, 0}} {
			t.Run(c.name+" after "+later.after.String(), func(t *testing.T) {
				f := newFake(t, reply{status: 500}, reply{status: 500}, reply{status: 500}, reply{status: 201, body: `{"status":"CREATED"}`})
				clock := fakeclock.New(time.Unix(1_700_000_000, 0)) // the ledger store's clock
				store := ledger.NewMemory(ledger.MemoryConfig{Config: ledger.Config{Retention: 60 * 24 * time.Hour}, Now: clock.Now})
				cl := atFake(t, f, presets.PayPalRoutes(), func(cfg *retrybudget.Config) { cfg.Ledger.Store = store })
				ctx := retrybudget.WithAction(context.Background(), retrybudget.Action{Tenant: "shop", Operation: "pay", Key: "order-7"})

				first := do(ctx, t, cl, f, "POST", c.path)
				if n := f.arrivals(); n != 3 || !first.MaybeApplied {
					t.Fatalf("first call: %d arrivals, maybe applied %v; want 3 attempts under one id, maybe applied", n, first.MaybeApplied)
				}
				clock.Advance(later.after)
				out := do(ctx, t, cl, f, "POST", c.path)
				got := f.arrivals() - 3
				t.Logf("%s: arrivals at the provider for the run %s later: %d", c.path, later.after, got)
				if got != later.arrivals {
					t.Fatalf("run %s later sent %d requests; want %d (window %s)", later.after, got, later.arrivals, c.window)
				}
				if later.arrivals == 0 && !errors.Is(out.Reason, retrybudget.ErrUncertain) {
					t.Fatalf("run past the window: reason %v; want ErrUncertain", out.Reason)
				}
				if later.arrivals == 1 {
					reqs := f.requests()
					if id := reqs[3].header.Get("PayPal-Request-Id"); id != reqs[0].header.Get("PayPal-Request-Id") || id == "" {
						t.Fatalf("re-sent under id %q; want the first id %q", id, reqs[0].header.Get("PayPal-Request-Id"))
					}
				}
			})
		}
	}
}

// TestStripeLedgerResendsOnlyWithinKeyRetention is the same for Stripe,
// which may drop a key once it is 24 hours old.
func TestStripeLedgerResendsOnlyWithinKeyRetention(t *testing.T) {
	for _, later := range []struct {
		after    time.Duration
		arrivals int
	}{{23 * time.Hour, 1}, {25 * time.Hour, 0}} {
		f := newFake(t, reply{status: 500}, reply{status: 500}, reply{status: 500}, reply{status: 200, body: `{"id":"ch_1"}`})
		clock := fakeclock.New(time.Unix(1_700_000_000, 0)) // the ledger store's clock
		store := ledger.NewMemory(ledger.MemoryConfig{Config: ledger.Config{Retention: 7 * 24 * time.Hour}, Now: clock.Now})
		cl := atFake(t, f, []retrybudget.Route{presets.Stripe()}, func(cfg *retrybudget.Config) { cfg.Ledger.Store = store })
		ctx := retrybudget.WithAction(context.Background(), retrybudget.Action{Tenant: "shop", Operation: "charge", Key: "order-7"})
		do(ctx, t, cl, f, "POST", "/v1/charges")
		clock.Advance(later.after)
		out := do(ctx, t, cl, f, "POST", "/v1/charges")
		if got := f.arrivals() - 3; got != later.arrivals {
			t.Fatalf("run %s later sent %d requests (reason %v); want %d", later.after, got, out.Reason, later.arrivals)
		}
	}
}

// TestPayPalCallsWithoutKeyAreNotRepeated sends the calls PayPal's SDK sends
// without PayPal-Request-Id (order confirm, tracking, subscription activate,
// suspend and cancel) under an Action, and gets a 500: PayPal does not
// deduplicate them, so the Transport neither sends the Action's key nor
// repeats the call, and the ledger never re-sends it. A keyed call (order
// create) is repeated under its id as before.
func TestPayPalCallsWithoutKeyAreNotRepeated(t *testing.T) {
	for _, c := range []struct {
		name, path string
		honoured   bool
	}{
		{"order confirm", "/v2/checkout/orders/5O190127TN364715T/confirm-payment-source", false},
		{"order tracking", "/v2/checkout/orders/5O190127TN364715T/track", false},
		{"subscription activate", "/v1/billing/subscriptions/I-BW452GLLEP1G/activate", false},
		{"subscription suspend", "/v1/billing/subscriptions/I-BW452GLLEP1G/suspend", false},
		{"subscription cancel", "/v1/billing/subscriptions/I-BW452GLLEP1G/cancel", false},
		{"order create", "/v2/checkout/orders", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, reply{status: 500})
			store := ledger.NewMemory(ledger.MemoryConfig{})
			cl := atFake(t, f, presets.PayPalRoutes(), func(cfg *retrybudget.Config) { cfg.Ledger.Store = store })
			ctx := retrybudget.WithAction(context.Background(), retrybudget.Action{Tenant: "shop", Operation: "op", Key: "sub-1"})
			out := do(ctx, t, cl, f, "POST", c.path)
			first := f.arrivals()
			do(ctx, t, cl, f, "POST", c.path)
			again := f.arrivals() - first
			t.Logf("%s: %d arrivals, then %d on the action's second run", c.path, first, again)
			want, wantAgain := 1, 0
			if c.honoured {
				want, wantAgain = 3, 3 // repeated under the id; the ledger re-sends under it
			}
			if first != want || again != wantAgain {
				t.Fatalf("%d arrivals, then %d; want %d, then %d", first, again, want, wantAgain)
			}
			id := f.requests()[0].header.Get("PayPal-Request-Id")
			if !c.honoured && (id != "" || !errors.Is(out.Reason, retrybudget.ErrUncertain)) {
				t.Fatalf("sent PayPal-Request-Id %q, reason %v; want none sent and ErrUncertain", id, out.Reason)
			}
			for i, r := range f.requests() {
				if c.honoured && (id == "" || r.header.Get("PayPal-Request-Id") != id) {
					t.Fatalf("request %d sent PayPal-Request-Id %q; want the Action's id %q on every one", i+1, r.header.Get("PayPal-Request-Id"), id)
				}
			}
		})
	}
}
