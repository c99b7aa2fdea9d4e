// Package paypal builds a plutov/paypal (github.com/plutov/paypal/v4)
// client on a retrybudget Transport. plutov/paypal makes no retries of its
// own, so the Transport alone decides what is repeated. It is a module of
// its own, so a program that uses it compiles plutov/paypal and no other
// SDK. Beside plutov/paypal, import it under a name of your own:
//
//	import "github.com/plutov/paypal/v4"
//	import rbpaypal "github.com/retrybudget/retrybudget/integrations/paypal"
//
//	tr := retrybudget.New(retrybudget.Config{Routes: []retrybudget.Route{presets.PayPal()}})
//	c, err := rbpaypal.NewClient(clientID, secret, paypal.APIBaseLive, tr)
//
//snippet:needs sdk
package paypal

import (
	"net/http"

	"github.com/plutov/paypal/v4"
)

// NewClient returns a plutov/paypal client for the app's clientID and
// secret that sends through rt to baseURL (paypal.APIBaseLive in
// production). It fetches its OAuth token (POST /v1/oauth2/token) with the
// caller's context: the PayPal preset sends that call without the Action
// (Route.Auxiliary).
func NewClient(clientID, secret, baseURL string, rt http.RoundTripper) (*paypal.Client, error) {
	c, err := paypal.NewClient(clientID, secret, baseURL)
	if err != nil {
		return nil, err
	}
	c.SetHTTPClient(&http.Client{Transport: rt})
	return c, nil
}
