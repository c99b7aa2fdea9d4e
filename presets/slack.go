package presets

import (
	"io"
	"mime"
	"net/http"
	"net/url"
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
//     path: a 429 on chat.postMessage does not pause users.list. The
//     token is read wherever the client puts it: the Authorization header,
//     or the "token" field of a form body (as slack-go sends it for some
//     methods), so one workspace's 429 never pauses another's.
//   - Key: the Web API documents no idempotency key, so none is sent
//     (OmitKey) and none is honoured.
//     A 429 was refused, so it is retried for any method; a POST that got
//     a 5xx is not repeated (ErrUncertain).
//   - Slack reports most errors as HTTP 200 with "ok": false in the body;
//     those are successes to the Transport and are the caller's to read.
//   - Three attempts, 1s doubling up to 30s (our choice; a Tier 1 method
//     may ask for up to a minute, which MaxWait's default 60s obeys).
//   - Auxiliary: /api/oauth.v2.access and /api/oauth.access (token
//     exchanges) carry no Action.
func Slack() retrybudget.Route {
	return retrybudget.Route{
		Name:       "slack",
		Host:       "slack.com",
		PathPrefix: "/api/",
		Auxiliary:  []string{"/api/oauth.v2.access", "/api/oauth.access"},
		Config: retrybudget.Config{
			OmitKey:     true,
			MaxAttempts: 3,
			BaseDelay:   time.Second,
			MaxDelay:    30 * time.Second,
			Boundary:    scoped(slackToken, slackMethod),
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

// slackToken is the Slack boundary's credential part: the host and a hash
// of the Authorization header, or, when there is none, of the "token" field
// of a form body, read through GetBody so the body sent is untouched.
func slackToken(r *http.Request) string {
	if r.Header.Get("Authorization") != "" || r.GetBody == nil {
		return limiter.ByCredential()(r)
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "application/x-www-form-urlencoded" {
		return limiter.ByCredential()(r)
	}
	body, err := r.GetBody()
	if err != nil {
		return limiter.ByCredential()(r)
	}
	defer body.Close()
	raw, err := io.ReadAll(io.LimitReader(body, slackMaxForm))
	if err != nil {
		return limiter.ByCredential()(r)
	}
	form, err := url.ParseQuery(string(raw))
	if err != nil || form.Get("token") == "" {
		return limiter.ByCredential()(r)
	}
	return limiter.ByHeader("Authorization")(&http.Request{URL: r.URL, Header: http.Header{"Authorization": {"Bearer " + form.Get("token")}}})
}

// slackMaxForm bounds the form body read for its token.
const slackMaxForm = 64 << 10
