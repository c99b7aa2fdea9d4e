// Package slack builds a slack-go (github.com/slack-go/slack) client on a
// retrybudget Transport. It is a module of its own, so a program that uses
// it compiles slack-go and no other SDK. Beside slack-go, import it under
// a name of your own:
//
//	import rbslack "github.com/retrybudget/retrybudget/integrations/slack"
//
//	tr := retrybudget.New(retrybudget.Config{Routes: []retrybudget.Route{presets.Slack()}})
//	c := rbslack.NewClient(token, "https://slack.com/api/", tr)
//
//snippet:needs sdk
package slack

import (
	"net/http"
	"strings"

	"github.com/slack-go/slack"
)

// NewClient returns a slack-go client for token that sends through rt to
// baseURL ("https://slack.com/api/" in production). slack-go retries only
// when given OptionRetry or OptionRetryConfig: do not pass them, the
// Transport retries (opts are applied after these).
func NewClient(token, baseURL string, rt http.RoundTripper, opts ...slack.Option) *slack.Client {
	return slack.New(token, append([]slack.Option{
		slack.OptionHTTPClient(&http.Client{Transport: rt}),
		slack.OptionAPIURL(strings.TrimSuffix(baseURL, "/") + "/"),
	}, opts...)...)
}
