// Package twilio builds a twilio-go (github.com/twilio/twilio-go) client on
// a retrybudget Transport. twilio-go makes no retries of its own, so the
// Transport alone decides what is repeated. It is a module of its own, so
// a program that uses it compiles twilio-go and no other SDK. Beside
// twilio-go, import it under a name of your own:
//
//	import rbtwilio "github.com/retrybudget/retrybudget/integrations/twilio"
//
//snippet:needs app, twilio, sdk
package twilio

import (
	"context"
	"net/http"
	"net/url"

	"github.com/twilio/twilio-go"
	"github.com/twilio/twilio-go/client"

	"github.com/retrybudget/retrybudget/integrations"
)

// NewClient returns a twilio-go client for one action: its calls take no
// context, so the client is built around ctx (integrations.Bind), and
// every request it makes carries ctx's Action, deadline, cancellation and
// CaptureOutcome record. Build one per action:
//
//	ctx = retrybudget.WithAction(ctx, retrybudget.Action{Operation: "sms", Key: id})
//	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
//	defer cancel()
//	tc, err := rbtwilio.NewClient(ctx, sid, token, "", tr)
//	msg, err := tc.Api.CreateMessage(params)
//
// baseURL, when set, replaces the scheme and host of every Twilio URL
// (api.twilio.com and the product hosts), for tests; empty means Twilio's
// own. twilio-go's default 10s client timeout is replaced by ctx's
// deadline.
//
//snippet:needs app, twilio, sdk
func NewClient(ctx context.Context, accountSid, authToken, baseURL string, rt http.RoundTripper) (*twilio.RestClient, error) {
	c := &client.Client{
		Credentials: client.NewCredentials(accountSid, authToken),
		HTTPClient:  &http.Client{Transport: integrations.Bind(ctx, rt)},
	}
	c.SetAccountSid(accountSid)
	var base client.BaseClient = c
	if baseURL != "" {
		u, err := url.Parse(baseURL)
		if err != nil {
			return nil, err
		}
		base = rebased{Client: c, base: u}
	}
	return twilio.NewRestClientWithParams(twilio.ClientParams{Client: base}), nil
}

// rebased sends twilio-go's requests to another scheme and host.
type rebased struct {
	*client.Client
	base *url.URL
}

// SendRequest implements client.BaseClient.
func (r rebased) SendRequest(method, rawURL string, data url.Values, headers map[string]interface{}, body ...byte) (*http.Response, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	u.Scheme, u.Host = r.base.Scheme, r.base.Host
	return r.Client.SendRequest(method, u.String(), data, headers, body...)
}
