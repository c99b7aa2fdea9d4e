package presets

import (
	"net/http"
	"strings"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/limiter"
	"github.com/retrybudget/retrybudget/rateheader"
)

// Slack returns the policy for the Slack Web API (https://slack.com/api/).
//
// Source: https://api.slack.com/docs/rate-limits (now
// https://docs.slack.dev/apis/web-api/rate-limits).
//
//   - A 429 is a capacity answer; its Retry-After gives the seconds to
//     wait, and the wait pauses the boundary (Slack: "a Retry-After HTTP
//     header containing the number of seconds until you can retry").
//   - Limits apply per method, per workspace, per app: tiers of 1+, 20+,
//     50+ and 100+ requests per minute, and special limits such as about
//     one message per second per channel for chat.postMessage. So the
//     boundary is the host, a hash of the Authorization header (the token,
//     which stands for app and workspace) and the method, taken from the
//     path: a 429 on chat.postMessage does not pause users.list. A token
//     sent as a form field instead of the Authorization header is not
//     seen: such requests share the method's boundary.
//   - Key: the Web API documents no idempotency key, so none is honoured.
//     A 429 was refused, so it is retried for any method; a POST that got
//     a 5xx is not repeated (ErrUncertain).
//   - Slack reports most errors as HTTP 200 with "ok": false in the body;
//     those are successes to the Transport and are the caller's to read.
//   - Three attempts, 1s doubling up to 30s (our choice; a Tier 1 method
//     may ask for up to a minute, which MaxWait's default 60s obeys).
func Slack() retrybudget.Route {
	return retrybudget.Route{
		Host:       "slack.com",
		PathPrefix: "/api/",
		Config: retrybudget.Config{
			MaxAttempts: 3,
			BaseDelay:   time.Second,
			MaxDelay:    30 * time.Second,
			Boundary:    scoped(limiter.ByCredential(), slackMethod),
			// rateheader.Classifier adds decimal Retry-After values to
			// DefaultClassifier's reading of the 429.
			Classifier: rateheader.Classifier{},
		},
	}
}

// slackMethod returns the Web API method of a request: the path segment
// after /api/, as in /api/chat.postMessage.
func slackMethod(r *http.Request) string {
	m, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/api/"), "/")
	return m
}
