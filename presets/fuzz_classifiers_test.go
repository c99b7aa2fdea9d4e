package presets

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/rateheader"
)

// FuzzClassifiers: every preset's classifier, and rateheader.Classifier,
// given any status, headers and body, returns a known class, never panics,
// and leaves the whole body for the caller.
func FuzzClassifiers(f *testing.F) {
	f.Add(429, "Retry-After", "5", "x-ratelimit-remaining", "0", `{"documentation_url":"secondary-rate-limits"}`)
	f.Add(403, "x-ratelimit-reset", "1893456000", "Stripe-Should-Retry", "true", `{"error":{"code":"insufficient_quota"}}`)
	f.Add(200, "X-Shopify-Shop-Api-Call-Limit", "40/40", "RateLimit", `"default";r=0;t=30`, "")
	f.Add(503, "retry-after-ms", "1500", "x-should-retry", "false", "not json")
	f.Add(200, "X-Request-Id", "1", "", "", `{"errors":[{"extensions":{"code":"THROTTLED"}}],"extensions":{"cost":{"requestedQueryCost":1e300,"throttleStatus":{"currentlyAvailable":-5,"restoreRate":1e-300}}}}`)
	f.Add(429, "", "", "", "", `{"code":60203,"status":429}`)
	f.Add(200, "x-ratelimit-remaining", "0", "x-ratelimit-reset", "1893456000", `{"data":null,"errors":[{"type":"RATE_LIMITED","message":"API rate limit exceeded"}]}`)
	f.Add(200, "x-ratelimit-remaining", "0", "", "", `{"data":{"createIssue":null},"errors":[{"type":"RATE_LIMIT"}]}`)
	var classifiers []retrybudget.Classifier
	github := -1
	for i, name := range Names() {
		r, _ := ByName(name)
		classifiers = append(classifiers, r.Config.Classifier)
		if name == "github" {
			github = i
		}
	}
	classifiers = append(classifiers, rateheader.Classifier{})
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, code int, k1, v1, k2, v2, body string) {
		code = 100 + (code%500+500)%500 // a status code, 100 to 599
		for i, c := range classifiers {
			if c == nil {
				continue
			}
			// The path decides which rules apply: Shopify's and GitHub's
			// GraphQL answers, Slack's read methods.
			path := [...]string{"/v1/x", "/admin/api/2024-10/graphql.json", "/api/users.list", "/graphql"}[(i+code)%4]
			h := http.Header{}
			h.Add(k1, v1)
			h.Add(k2, v2)
			h.Set("Content-Type", "application/json")
			resp := &http.Response{StatusCode: code, Header: h, Body: io.NopCloser(strings.NewReader(body))}
			req, _ := http.NewRequest("POST", "https://api.example.com"+path, nil)
			cls := c.Classify(&retrybudget.AttemptResult{Request: req, Response: resp, Now: now})
			if cls.Class.String() == "unknown" {
				t.Fatalf("%T: status %d got an unknown class", c, code)
			}
			if wait := cls.PauseUntil.Sub(now); wait > 24*time.Hour {
				t.Fatalf("%T: status %d paused for %v", c, code, wait)
			}
			if i == github && code == http.StatusOK && cls.Class == retrybudget.ClassCapacity && hasData(body) {
				// A GraphQL answer with data may have run: never a
				// rate limit to retry.
				t.Fatalf("GitHub: a 200 with data %q is capacity", body)
			}
			got, _ := io.ReadAll(resp.Body)
			if string(got) != body {
				t.Fatalf("%T consumed the body: %q of %q", c, got, body)
			}
		}
	})
}

// hasData reports whether body is a JSON object whose data member is
// present and not null: a GraphQL answer that may have run.
func hasData(body string) bool {
	var v struct {
		Data json.RawMessage `json:"data"`
	}
	return json.Unmarshal([]byte(body), &v) == nil && len(v.Data) > 0 && string(v.Data) != "null"
}

// Regression: a preset read an error body with no time bound, so a body
// that stalled after its first bytes held the call until its deadline.
func TestStalledErrorBodyDoesNotHoldTheClassifier(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte(`{"documentation_url":`))
	h := http.Header{"Content-Type": {"application/json"}}
	resp := &http.Response{StatusCode: 403, Header: h, Body: pr}
	req, _ := http.NewRequest("GET", "https://api.github.com/repos/x/y", nil)
	start := time.Now()
	GitHub().Config.Classifier.Classify(&retrybudget.AttemptResult{Request: req, Response: resp, Now: start})
	if took := time.Since(start); took > time.Second {
		t.Fatalf("classifying took %v; want about %v at most", took, peekWait)
	}
	resp.Body.Close()
}
