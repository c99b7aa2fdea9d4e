package integrations

import (
	"net/http"

	"github.com/plutov/paypal/v4"
)

// PayPal returns a plutov/paypal client for the app's clientID and secret
// that sends through rt to baseURL (paypal.APIBaseLive in production).
// plutov/paypal makes no retries of its own. It fetches its OAuth token
// (POST /v1/oauth2/token) with the caller's context: the PayPal preset
// sends that call without the Action (Route.Auxiliary).
func PayPal(clientID, secret, baseURL string, rt http.RoundTripper) (*paypal.Client, error) {
	c, err := paypal.NewClient(clientID, secret, baseURL)
	if err != nil {
		return nil, err
	}
	c.SetHTTPClient(&http.Client{Transport: rt})
	return c, nil
}
