// Package github builds a go-github (github.com/google/go-github/v84)
// client on a retrybudget Transport. go-github makes no retries of its own
// (it returns RateLimitError and AbuseRateLimitError), so the Transport
// alone decides what is repeated. It is a module of its own, so a program
// that uses it compiles go-github and no other SDK. Beside go-github,
// import it under a name of your own:
//
//	import rbgithub "github.com/retrybudget/retrybudget/integrations/github"
//
//	tr := retrybudget.New(retrybudget.Config{Routes: []retrybudget.Route{presets.GitHub()}})
//	c, err := rbgithub.NewClient(token, "https://api.github.com/", tr)
//
//snippet:needs sdk
package github

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/go-github/v84/github"
)

// NewClient returns a go-github client for token that sends through rt to
// baseURL ("https://api.github.com/" in production).
//
// Its own rate-limit check is off (github.Client.DisableRateLimitCheck).
// With it on, go-github refuses a call by itself, sending nothing, while
// the last answer said the quota is spent or a secondary limit applies:
// the Transport never sees the call, so retrybudget.Captured.Next can only
// read the refusal as a final answer (StepStop), and a worker drops a job
// that would succeed after the reset. The GitHub preset's limiter and
// Retry-After handling pause the calls instead, and Next says when to
// come back. Set it on a go-github client you build yourself.
func NewClient(token, baseURL string, rt http.RoundTripper) (*github.Client, error) {
	u, err := url.Parse(strings.TrimSuffix(baseURL, "/") + "/")
	if err != nil {
		return nil, fmt.Errorf("integrations/github: base URL: %w", err)
	}
	c := github.NewClient(&http.Client{Transport: rt}).WithAuthToken(token)
	c.BaseURL = u
	c.DisableRateLimitCheck = true
	return c, nil
}
