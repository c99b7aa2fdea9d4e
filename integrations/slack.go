package integrations

import (
	"net/http"
	"strings"

	"github.com/slack-go/slack"
)

// Slack returns a slack-go client for token that sends through rt to
// baseURL ("https://slack.com/api/" in production). slack-go retries only
// when given OptionRetry or OptionRetryConfig: do not pass them, the
// Transport retries (opts are applied after these).
func Slack(token, baseURL string, rt http.RoundTripper, opts ...slack.Option) *slack.Client {
	return slack.New(token, append([]slack.Option{
		slack.OptionHTTPClient(&http.Client{Transport: rt}),
		slack.OptionAPIURL(strings.TrimSuffix(baseURL, "/") + "/"),
	}, opts...)...)
}
