package stripe_test

import (
	"context"
	"fmt"

	"github.com/stripe/stripe-go/v85"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/integrations/fakes"
	rbstripe "github.com/retrybudget/retrybudget/integrations/stripe"
	"github.com/retrybudget/retrybudget/presets"
)

// A charge made twice under one Action is applied once: the Action's key
// replaces stripe-go's random Idempotency-Key. A local fake of Stripe
// stands in for stripe.APIURL.
func ExampleNewClient() {
	p := fakes.Stripe()
	defer p.Close()
	tr := retrybudget.New(retrybudget.Config{Routes: []retrybudget.Route{presets.Stripe().At(p.URL())}})
	sc := rbstripe.NewClient("sk_test_123", p.URL(), tr)
	ctx := retrybudget.WithAction(context.Background(), retrybudget.Action{Operation: "charge", Key: "order-1"})
	for range 2 {
		ch, err := sc.V1Charges.Create(ctx, &stripe.ChargeCreateParams{Amount: stripe.Int64(100), Currency: stripe.String("usd")})
		fmt.Println(ch.ID, err)
	}
	fmt.Println("charges applied:", p.Effects())
	// Output:
	// ch_1 <nil>
	// ch_1 <nil>
	// charges applied: 1
}
