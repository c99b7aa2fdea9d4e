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
// Source (read 2026-12-03): https://api.slack.com/docs/rate-limits (now
// https://docs.slack.dev/apis/web-api/rate-limits).
//
//   - A 429 is a capacity answer; its Retry-After gives the seconds to
//     wait, and the wait pauses the boundary (Slack: "a Retry-After HTTP
//     header containing the number of seconds until you can retry").
//   - Limits apply per method, per workspace, per app: tiers of 1+, 20+,
//     50+ and 100+ requests per minute, and special limits such as about
//     one message per second per channel for chat.postMessage. So the
//     boundary is the token and the method, taken from the path: a 429 on
//     chat.postMessage does not pause users.list. The token is read
//     wherever the client puts it: the Authorization header, or the
//     "token" field of a form body (as slack-go sends it for some
//     methods), so one workspace's 429 never pauses another's. An app's
//     bot and user tokens in one workspace share its limits but have two
//     tokens: map each token to its workspace and app with SlackBoundary
//     so they share one boundary.
//   - Key: the Web API documents no idempotency key, so none is sent
//     (OmitKey) and none is honoured.
//     A 429 was refused, so it is retried for any method; a write (such
//     as chat.postMessage) that got a 5xx is not repeated (ErrUncertain).
//   - Read methods (names ending in .list, .info, .history or .replies,
//     such as conversations.history) change nothing, but slack-go sends
//     them as POST: a 5xx or a lost answer on them is repeated (HintRetry),
//     as for a GET.
//   - Slack reports most errors as HTTP 200 with "ok": false in the body;
//     those are successes to the Transport and are the caller's to read.
//   - Three attempts, 1s doubling up to 30s (our choice; a Tier 1 method
//     may ask for up to a minute, which MaxWait's default 60s obeys).
//     slack-go retries only 429s by default, and only when asked to.
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
			// the reading of the 429.
			Classifier: rateheader.Classifier{Next: slackClassifier{}},
		},
	}
}

// SlackBoundary returns the Slack preset's Boundary with the workspace and
// app of each token, as team names them (for example "T0123/A0456", from
// auth.test's team_id and the app's id), in place of the token: every token
// of one app in one workspace, bot and user, then shares its limits, as
// Slack meters them. A token team maps to "" keeps a boundary of its own.
// team must be safe for concurrent use and fast: it runs before every
// attempt.
func SlackBoundary(team func(token string) string) limiter.Boundary {
	return scoped(func(r *http.Request) string {
		if tok := slackRawToken(r); tok != "" {
			if t := team(tok); t != "" {
				return "slack:" + t
			}
		}
		return slackToken(r)
	}, slackMethod)
}

// slackMethod returns the Web API method of a request: the path segment
// after /api/, as in /api/chat.postMessage (under a base path too, for a
// Route moved with At).
func slackMethod(r *http.Request) string {
	_, rest, ok := strings.Cut(r.URL.Path, "/api/")
	if !ok {
		return ""
	}
	m, _, _ := strings.Cut(rest, "/")
	return m
}

// slackRead reports whether method only reads, by Slack's naming.
func slackRead(method string) bool {
	for _, suffix := range [...]string{".list", ".info", ".history", ".replies"} {
		if strings.HasSuffix(method, suffix) {
			return true
		}
	}
	return false
}

// slackClassifier lets a read method sent as POST repeat after a failure
// that may have reached Slack, as a GET would.
type slackClassifier struct{}

// Classify implements retrybudget.Classifier.
func (slackClassifier) Classify(a *retrybudget.AttemptResult) retrybudget.Classification {
	cls := retrybudget.DefaultClassifier{}.Classify(a)
	switch {
	case a.Repeatable || cls.Hint != retrybudget.HintNone || !slackRead(slackMethod(a.Request)):
	case cls.Class == retrybudget.ClassServer || cls.Class == retrybudget.ClassMaybeSent ||
		(cls.Class == retrybudget.ClassCapacity && cls.MaybeApplied):
		cls.Hint = retrybudget.HintRetry
	}
	return cls
}

// slackToken is the Slack boundary's credential part: the host and a hash
// of the token (see slackRawToken).
func slackToken(r *http.Request) string {
	if r.Header.Get("Authorization") != "" {
		return limiter.ByCredential()(r)
	}
	tok := slackRawToken(r)
	if tok == "" {
		return limiter.ByCredential()(r)
	}
	return limiter.ByHeader("Authorization")(&http.Request{URL: r.URL, Header: http.Header{"Authorization": {"Bearer " + tok}}})
}

// slackRawToken returns the request's token: the bearer token of the
// Authorization header, or, when there is none, the "token" field of a
// form body, read through GetBody so the body sent is untouched. Empty
// means none was found.
func slackRawToken(r *http.Request) string {
	if auth := r.Header.Get("Authorization"); auth != "" {
		if tok, ok := strings.CutPrefix(auth, "Bearer "); ok {
			return tok
		}
		return ""
	}
	if r.GetBody == nil {
		return ""
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "application/x-www-form-urlencoded" {
		return ""
	}
	body, err := r.GetBody()
	if err != nil {
		return ""
	}
	defer body.Close()
	raw, err := io.ReadAll(io.LimitReader(body, slackMaxForm))
	if err != nil {
		return ""
	}
	form, err := url.ParseQuery(string(raw))
	if err != nil {
		return ""
	}
	return form.Get("token")
}

// slackMaxForm bounds the form body read for its token.
const slackMaxForm = 64 << 10
