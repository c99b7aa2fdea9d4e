package presets_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/limiter"
	"github.com/retrybudget/retrybudget/presets"
)

const githubIssues = "https://api.github.com/repos/acme/app/issues"

// epochIn returns the epoch seconds of now+d, as GitHub's
// x-ratelimit-reset carries them.
func epochIn(d time.Duration) (string, time.Time) {
	at := time.Now().Add(d).Truncate(time.Second)
	return strconv.FormatInt(at.Unix(), 10), at
}

func TestGitHubPrimaryLimit(t *testing.T) {
	for _, status := range []int{403, 429} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			reset, resetAt := epochIn(10 * time.Minute)
			f := newFake(t, reply{status: status, header: []string{
				"x-ratelimit-limit", "5000", "x-ratelimit-remaining", "0", "x-ratelimit-reset", reset, "x-ratelimit-resource", "core"}})
			lim := &recorder{}
			c := client(t, f, presets.GitHub(), lim, nil)
			_, _, out := call(t.Context(), t, c, "GET", githubIssues, "Authorization", "Bearer ghp_test")
			if out.Attempts != 1 || !errors.Is(out.Reason, retrybudget.ErrWaitTooLong) || out.Class != retrybudget.ClassCapacity {
				t.Fatalf("attempts %d, reason %v, class %v; want one capacity attempt ending with ErrWaitTooLong",
					out.Attempts, out.Reason, out.Class)
			}
			if !out.RetryAt.Equal(resetAt) {
				t.Fatalf("RetryAt %v; want the reset %v", out.RetryAt, resetAt)
			}
			boundaries, cools := lim.recorded()
			if len(cools) != 1 || !cools[0].until.Equal(resetAt) || cools[0].boundary != boundaries[0] {
				t.Fatalf("cooldowns %+v; want one until the reset on the request's boundary", cools)
			}
			if !strings.HasPrefix(boundaries[0], "api.github.com#") || !strings.HasSuffix(boundaries[0], "|core") {
				t.Fatalf("boundary %q; want host, credential hash and the core resource", boundaries[0])
			}
		})
	}
}

func TestGitHubSecondaryLimit(t *testing.T) {
	secondaryBody := `{"message":"You have exceeded a secondary rate limit.","documentation_url":"https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`
	spentReset, _ := epochIn(10 * time.Minute)
	tests := []struct {
		name  string
		reply reply
		wait  time.Duration
	}{
		{"403 with retry-after", reply{status: 403, header: []string{"retry-after", "30", "x-ratelimit-remaining", "4000"}}, 30 * time.Second},
		{"429 with retry-after", reply{status: 429, header: []string{"retry-after", "45"}}, 45 * time.Second},
		{"429 without either waits a minute", reply{status: 429, header: []string{"x-ratelimit-remaining", "4000"}}, time.Minute},
		{"403 with the secondary body waits a minute", reply{status: 403,
			header: []string{"Content-Type", "application/json; charset=utf-8", "x-ratelimit-remaining", "4000"}, body: secondaryBody}, time.Minute},
		{"403 with the old abuse body waits a minute", reply{status: 403, header: []string{"Content-Type", "application/json"},
			body: `{"documentation_url":"https://docs.github.com/rest/overview/resources-in-the-rest-api#abuse-rate-limits"}`}, time.Minute},
		{"403 with the secondary body and a spent quota waits for the reset", reply{status: 403,
			header: []string{"Content-Type", "application/json", "x-ratelimit-remaining", "0", "x-ratelimit-reset", spentReset}, body: secondaryBody}, 10 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.reply)
			lim := &recorder{}
			c := client(t, f, presets.GitHub(), lim, nil)
			start := time.Now()
			_, body, out := call(t.Context(), t, c, "POST", githubIssues)
			if out.Attempts != 1 || out.Class != retrybudget.ClassCapacity || !errors.Is(out.Reason, retrybudget.ErrWaitTooLong) {
				t.Fatalf("attempts %d, class %v, reason %v; want one capacity attempt, ErrWaitTooLong", out.Attempts, out.Class, out.Reason)
			}
			if body != tt.reply.body {
				t.Fatalf("body %q; want the provider's body untouched", body)
			}
			if !near(out.RetryAt, start.Add(tt.wait), 2*time.Second) {
				t.Fatalf("RetryAt start+%v; want about %v", out.RetryAt.Sub(start), tt.wait)
			}
			// One cooldown, of the credential's scope: it holds every
			// resource of the credential, the request's among them.
			boundaries, cools := lim.recorded()
			if len(cools) != 1 || !cools[0].until.Equal(out.RetryAt) || cools[0].boundary != limiter.Scope(boundaries[0]) ||
				cools[0].boundary == boundaries[0] {
				t.Fatalf("cooldowns %+v (boundary %q); want one until RetryAt on the credential's scope", cools, boundaries[0])
			}
		})
	}
}

func TestGitHubSecondaryLimitRetryAfterZeroIsRetried(t *testing.T) {
	f := newFake(t, reply{status: 403, header: []string{"retry-after", "0"}}, reply{status: 201})
	c := client(t, f, presets.GitHub(), nil, nil)
	resp, _, out := call(t.Context(), t, c, "POST", githubIssues)
	if resp.StatusCode != 201 || out.Attempts != 2 {
		t.Fatalf("status %d after %d attempts; want 201 after 2: a secondary limit was refused, so even a POST repeats", resp.StatusCode, out.Attempts)
	}
}

func TestGitHubPermissionErrorIsBusiness(t *testing.T) {
	body := `{"message":"Resource not accessible by integration","documentation_url":"https://docs.github.com/rest/issues/issues#create-an-issue"}`
	f := newFake(t, reply{status: 403, header: []string{"Content-Type", "application/json", "x-ratelimit-remaining", "4999"}, body: body})
	lim := &recorder{}
	c := client(t, f, presets.GitHub(), lim, nil)
	_, got, out := call(t.Context(), t, c, "POST", githubIssues)
	if out.Attempts != 1 || out.Class != retrybudget.ClassBusiness || !errors.Is(out.Reason, retrybudget.ErrRejected) {
		t.Fatalf("attempts %d, class %v, reason %v; want one rejected business attempt", out.Attempts, out.Class, out.Reason)
	}
	if got != body {
		t.Fatalf("body %q; want the provider's body after the classifier peeked at it", got)
	}
	if _, cools := lim.recorded(); len(cools) != 0 {
		t.Fatalf("cooldowns %+v; want none for a permission error", cools)
	}
}

func TestGitHubSpentQuotaOnSuccessPausesTheBoundary(t *testing.T) {
	reset, resetAt := epochIn(20 * time.Minute)
	f := newFake(t, reply{status: 200, header: []string{"x-ratelimit-remaining", "0", "x-ratelimit-reset", reset}, body: "[]"})
	lim := &recorder{}
	c := client(t, f, presets.GitHub(), lim, nil)
	resp, _, out := call(t.Context(), t, c, "GET", "https://api.github.com/search/issues?q=bug")
	if resp.StatusCode != 200 || out.Reason != nil {
		t.Fatalf("status %d, reason %v; want the success returned", resp.StatusCode, out.Reason)
	}
	boundaries, cools := lim.recorded()
	if len(cools) != 1 || !cools[0].until.Equal(resetAt) || !strings.HasSuffix(cools[0].boundary, "|search") {
		t.Fatalf("cooldowns %+v (boundaries %v); want one until the reset on the search boundary", cools, boundaries)
	}
}

func TestGitHubResourceBoundaries(t *testing.T) {
	f := newFake(t, reply{status: 200})
	lim := &recorder{}
	c := client(t, f, presets.GitHub(), lim, nil)
	for _, path := range []string{"/repos/a/b", "/search/issues", "/search/code", "/graphql"} {
		call(t.Context(), t, c, "GET", "https://api.github.com"+path, "Authorization", "Bearer ghp_test")
	}
	boundaries, _ := lim.recorded()
	want := []string{"|core", "|search", "|code_search", "|graphql"}
	for i, b := range boundaries {
		if !strings.HasSuffix(b, want[i]) || strings.Contains(b, "ghp_test") {
			t.Fatalf("boundary %d = %q; want suffix %q and no raw token", i, b, want[i])
		}
	}
}
