package stripe_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stripe/stripe-go/v85"

	"github.com/retrybudget/retrybudget"
	rbstripe "github.com/retrybudget/retrybudget/integrations/stripe"
	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/presets"
)

// mockClient is stripe-go on a Transport with presets.Stripe pointed at
// stripe-mock and a ledger, with the requests that reach stripe-mock
// counted.
type mockClient struct {
	sc   *stripe.Client
	sent *arrivals
}

// ledgerStores are the ledgers each test runs on: one process's memory,
// and Redis as a fleet shares it.
var ledgerStores = []struct {
	name string
	new  func(t *testing.T) ledger.Store
}{
	{"memory", func(*testing.T) ledger.Store { return ledger.NewMemory(ledger.MemoryConfig{}) }},
	{"redis", func(t *testing.T) ledger.Store {
		s, err := ledger.NewRedis(redistest.Client(t), ledger.RedisConfig{Prefix: redistest.Prefix(t),
			Config: ledger.Config{FingerprintKeys: ledger.FingerprintKeys{redistest.LedgerKey()}}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
}

// newMockClient returns stripe-go on a Transport with the Stripe preset
// and store as its ledger, sending to the stripe-mock at url.
func newMockClient(t *testing.T, url string, store ledger.Store) mockClient {
	base := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	sent := &arrivals{base: base}
	tr := retrybudget.New(retrybudget.Config{
		Base:   sent,
		Ledger: retrybudget.LedgerConfig{Store: store},
		Routes: []retrybudget.Route{presets.Stripe().At(url)},
	})
	return mockClient{sc: rbstripe.NewClient("sk_test_123", url, tr), sent: sent}
}

// TestValidationFailureSavesNothing: Stripe saves no result for a request
// that fails validation ("If incoming parameters fail validation ... no
// idempotent result is saved"), so the 400 is recorded as failed without
// effect, not as the action's answer: the corrected request under the same
// Action reaches Stripe, under the same key, and its answer is then the
// action's, replayed on a rerun.
func TestValidationFailureSavesNothing(t *testing.T) {
	url := startStripeMock(t)
	for _, st := range ledgerStores {
		t.Run(st.name, func(t *testing.T) {
			c := newMockClient(t, url, st.new(t))
			ctx := retrybudget.WithAction(context.Background(), retrybudget.Action{Operation: "pay", Key: "order-1"})

			// No currency: stripe-mock refuses it as Stripe does.
			_, err := c.sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(100)})
			var serr *stripe.Error
			if !errors.As(err, &serr) || serr.HTTPStatusCode != http.StatusBadRequest || serr.Type != stripe.ErrorTypeInvalidRequest {
				t.Fatalf("invalid request: err = %v, want a 400 invalid_request_error", err)
			}
			if n := c.sent.count(); n != 1 {
				t.Fatalf("invalid request: %d arrivals, want 1", n)
			}

			corrected := &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(100), Currency: stripe.String("usd")}
			pi, err := c.sc.V1PaymentIntents.Create(ctx, corrected)
			got := c.sent.since(1)
			t.Logf("corrected request: err = %v, %d arrivals", err, len(got))
			if err != nil || pi == nil || pi.ID == "" {
				t.Fatalf("corrected request: err = %v, want the created PaymentIntent", err)
			}
			if len(got) != 1 || got[0].key != c.sent.since(0)[0].key || got[0].key == "" {
				t.Fatalf("corrected request: arrivals %+v, want 1 under the first request's key", got)
			}

			// The corrected request's answer is the action's now.
			ctx, out := retrybudget.CaptureOutcome(ctx)
			again, err := c.sc.V1PaymentIntents.Create(ctx, corrected)
			if o, _ := out.Last(); err != nil || !o.Replayed || again.ID != pi.ID || c.sent.count() != 2 {
				t.Fatalf("rerun: err = %v, replayed %v, id %q (want %q), %d arrivals (want 2)", err, o.Replayed, again.ID, pi.ID, c.sent.count())
			}
		})
	}
}

// TestSafeMethodsUnderActionReachStripe: a GET under an Action has no
// effect to deduplicate, so it goes to Stripe each time, unkeyed: the
// second page of a list (starting_after) is not refused as a conflict,
// and a read repeated later is not answered from the ledger. A POST of the
// same job still goes through the ledger.
func TestSafeMethodsUnderActionReachStripe(t *testing.T) {
	url := startStripeMock(t)
	for _, st := range ledgerStores {
		t.Run(st.name, func(t *testing.T) {
			c := newMockClient(t, url, st.new(t))
			ctx := retrybudget.WithAction(context.Background(), retrybudget.Action{Operation: "report", Key: "job-7"})
			list := func(after string) error {
				p := &stripe.ChargeListParams{}
				p.Limit = stripe.Int64(3)
				if after != "" {
					p.StartingAfter = stripe.String(after)
				}
				for _, err := range c.sc.V1Charges.List(ctx, p).All(ctx) {
					if err != nil {
						return err
					}
				}
				return nil
			}
			steps := []struct {
				name string
				run  func() error
			}{
				{"page 1", func() error { return list("") }},
				{"page 2", func() error { return list("ch_1") }},
				{"page 1 again", func() error { return list("") }},
				{"retrieve", func() error { _, err := c.sc.V1Customers.Retrieve(ctx, "cus_1", nil); return err }},
				{"retrieve again", func() error { _, err := c.sc.V1Customers.Retrieve(ctx, "cus_1", nil); return err }},
			}
			for i, s := range steps {
				err := s.run()
				got := c.sent.since(i)
				t.Logf("%s: err = %v, %d arrivals", s.name, err, len(got))
				if err != nil {
					t.Fatalf("%s: %v", s.name, err)
				}
				if len(got) != 1 || got[0].method != http.MethodGet || got[0].key != "" {
					t.Fatalf("%s: arrivals %+v, want one unkeyed GET", s.name, got)
				}
			}

			// The job's write is still the Action's: once, then replayed.
			n := c.sent.count()
			for range 2 {
				if _, err := c.sc.V1Customers.Create(ctx, &stripe.CustomerCreateParams{Email: stripe.String("a@example.com")}); err != nil {
					t.Fatal(err)
				}
			}
			if got := c.sent.since(n); len(got) != 1 || got[0].key == "" {
				t.Fatalf("create twice under the Action: arrivals %+v, want 1, keyed", got)
			}
		})
	}
}

// TestConnectedAccountsKeptApart: under Stripe Connect one Action sent
// for two connected accounts (Stripe-Account) is two actions, as two
// tenants' would be: the second account's request reaches Stripe under a
// key of its own instead of being answered with the first account's
// customer, and each account's rerun is replayed from its own record.
func TestConnectedAccountsKeptApart(t *testing.T) {
	url := startStripeMock(t)
	for _, st := range ledgerStores {
		t.Run(st.name, func(t *testing.T) {
			c := newMockClient(t, url, st.new(t))
			ctx := retrybudget.WithAction(context.Background(), retrybudget.Action{Operation: "onboard", Key: "customer-9"})
			create := func(account string) (retrybudget.Outcome, error) {
				p := &stripe.CustomerCreateParams{Email: stripe.String("a@example.com")}
				p.SetStripeAccount(account)
				cctx, out := retrybudget.CaptureOutcome(ctx)
				_, err := c.sc.V1Customers.Create(cctx, p)
				o, _ := out.Last()
				return o, err
			}
			for _, acct := range []string{"acct_1AAA", "acct_2BBB"} {
				n := c.sent.count()
				o, err := create(acct)
				got := c.sent.since(n)
				t.Logf("%s: err = %v, replayed %v, %d arrivals", acct, err, o.Replayed, len(got))
				if err != nil || o.Replayed || len(got) != 1 || got[0].account != acct {
					t.Fatalf("%s: err = %v, replayed %v, arrivals %+v; want one arrival for the account", acct, err, o.Replayed, got)
				}
			}
			keys := c.sent.since(0)
			if keys[0].key == "" || keys[0].key == keys[1].key {
				t.Fatalf("keys %q and %q: want one of its own per account", keys[0].key, keys[1].key)
			}
			for _, acct := range []string{"acct_1AAA", "acct_2BBB"} {
				n := c.sent.count()
				if o, err := create(acct); err != nil || !o.Replayed || c.sent.count() != n {
					t.Fatalf("%s rerun: err = %v, replayed %v, %d arrivals; want replayed, none", acct, err, o.Replayed, c.sent.count()-n)
				}
			}
		})
	}
}
