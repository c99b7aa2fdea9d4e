package paypal_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/plutov/paypal/v4"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/integrations/fakes"
	"github.com/retrybudget/retrybudget/integrations/internal/sdktest"
	rbpaypal "github.com/retrybudget/retrybudget/integrations/paypal"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/presets"
)

// sdk is plutov/paypal under test; it makes no retries of its own, and a
// new client fetches its token before its first order.
var sdk = sdktest.SDK{
	Name: "paypal", Fake: fakes.PayPal, Preset: presets.PayPal,
	Honours: true, Auxiliary: 1, Call: call,
}

// clients caches one plutov/paypal client per fake and Transport, as an
// application keeps one (it caches its access token).
var clients sync.Map // clientKey → func(context.Context) error

type clientKey struct {
	url string
	rt  http.RoundTripper
}

// call creates one order through the cached client for url and rt.
func call(ctx context.Context, url string, rt http.RoundTripper, _ bool) error {
	k := clientKey{url, rt}
	v, ok := clients.Load(k)
	if !ok {
		c, err := newOrderer(url, rt)
		if err != nil {
			return err
		}
		v, _ = clients.LoadOrStore(k, c)
	}
	return v.(func(context.Context) error)(ctx)
}

// newOrderer returns a function creating one order through one
// plutov/paypal client.
func newOrderer(url string, rt http.RoundTripper) (func(context.Context) error, error) {
	c, err := rbpaypal.NewClient("client", "secret", url, rt)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		_, err := c.CreateOrder(ctx, paypal.OrderIntentCapture,
			[]paypal.PurchaseUnitRequest{{Amount: &paypal.PurchaseUnitAmount{Currency: "USD", Value: "1.00"}}}, nil, nil)
		return err
	}, nil
}

func TestCaptureOutcomeWaitTooLong(t *testing.T)  { sdktest.CaptureOutcomeWaitTooLong(t, sdk) }
func TestCapturedNext(t *testing.T)               { sdktest.CapturedNext(t, sdk) }
func TestJobRunTwiceOneEffect(t *testing.T)       { sdktest.JobRunTwiceOneEffect(t, sdk) }
func TestActionKeyWinsWithoutLedger(t *testing.T) { sdktest.ActionKeyWinsWithoutLedger(t, sdk) }
func TestOutageOneCallArrivals(t *testing.T)      { sdktest.OutageOneCallArrivals(t, sdk) }
func TestOutageFleetAmplification(t *testing.T)   { sdktest.OutageFleetAmplification(t, sdk) }
func TestWorkerKilledAfterTheEffect(t *testing.T) { sdktest.WorkerKilledAfterTheEffect(t, sdk) }
func TestSDKWorkerChild(t *testing.T)             { sdktest.WorkerChild(t, sdk) }

// TestPayPalTokenCallCarriesNoAction: plutov/paypal fetches its OAuth
// token with the caller's context; the token POST takes neither the
// Action's key nor its ledger record, and the order is sent once under the
// Action's key.
func TestPayPalTokenCallCarriesNoAction(t *testing.T) {
	p := sdktest.Start(t, sdk)
	tr := sdktest.NewTransport(sdk, p, retrybudget.Config{Ledger: retrybudget.LedgerConfig{Store: ledger.NewMemory(ledger.MemoryConfig{})}})
	a := retrybudget.Action{Operation: "order", Key: "o-1"}
	c, err := newOrderer(p.URL(), tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := c(retrybudget.WithAction(context.Background(), a)); err != nil {
		t.Fatal(err)
	}
	var token, order int
	for _, arr := range p.Arrivals() {
		switch {
		case strings.HasSuffix(arr.Path, "/oauth2/token"):
			token++
			if arr.Key == a.IdempotencyKey() {
				t.Error("the token call carried the Action's key")
			}
		case arr.Target:
			order++
			if arr.Key != a.IdempotencyKey() {
				t.Errorf("order key %q, want the Action's %q", arr.Key, a.IdempotencyKey())
			}
		}
	}
	if token != 1 || order != 1 || p.Effects() != 1 {
		t.Fatalf("token calls %d, order calls %d, effects %d; want 1, 1, 1", token, order, p.Effects())
	}
}
