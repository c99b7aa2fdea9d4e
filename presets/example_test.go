package presets_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/presets"
)

func ExampleByName() {
	for _, name := range presets.Names() {
		r, _ := presets.ByName(name)
		key := r.Config.KeyHeader
		if !r.Config.KeysHonoured {
			key = "no key honoured"
		}
		fmt.Printf("%s: %s%s, %s\n", name, r.Host, r.PathPrefix, key)
	}
	// Output:
	// github: api.github.com, no key honoured
	// openai: api.openai.com, no key honoured
	// paypal: api-m.paypal.com, PayPal-Request-Id
	// shopify: *.myshopify.com/admin/api/, no key honoured
	// slack: slack.com/api/, no key honoured
	// stripe: api.stripe.com, Idempotency-Key
	// twilio: *.twilio.com, no key honoured
}

// stripeSaysNo is an offline stand-in for Stripe: it answers 500 with
// Stripe-Should-Retry: false, then would answer 200.
type stripeSaysNo struct{ calls int }

func (s *stripeSaysNo) RoundTrip(req *http.Request) (*http.Response, error) {
	s.calls++
	h := http.Header{}
	status := 200
	if s.calls == 1 {
		status = 500
		h.Set("Stripe-Should-Retry", "false")
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

func ExampleStripe() {
	stripe := &stripeSaysNo{}
	client := &http.Client{Transport: retrybudget.New(retrybudget.Config{
		Base:   stripe,
		Routes: []retrybudget.Route{presets.Stripe()},
	})}
	resp, err := client.Post("https://api.stripe.com/v1/refunds", "application/x-www-form-urlencoded", strings.NewReader("charge=ch_1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	out, _ := retrybudget.OutcomeOf(resp)
	fmt.Println(resp.StatusCode, out.Attempts, out.Reason)
	// Output:
	// 500 1 retrybudget: rejected by the provider
}
