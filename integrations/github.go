package integrations

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/go-github/v84/github"
)

// GitHub returns a go-github client for token that sends through rt to
// baseURL ("https://api.github.com/" in production). go-github makes no
// retries of its own: it returns RateLimitError and AbuseRateLimitError.
func GitHub(token, baseURL string, rt http.RoundTripper) (*github.Client, error) {
	u, err := url.Parse(strings.TrimSuffix(baseURL, "/") + "/")
	if err != nil {
		return nil, fmt.Errorf("integrations: GitHub base URL: %w", err)
	}
	c := github.NewClient(&http.Client{Transport: rt}).WithAuthToken(token)
	c.BaseURL = u
	return c, nil
}
