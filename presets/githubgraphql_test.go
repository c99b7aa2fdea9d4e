package presets_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/presets"
)

// A GraphQL query past GitHub's primary limit is answered 200 with errors
// of type RATE_LIMITED and no data: the query did not run.

const (
	githubGraphQL    = "/graphql"
	githubMutation   = `{"query":"mutation { createIssue(input: {repositoryId: \"R_1\", title: \"disk full\"}) { issue { number } } }"}`
	githubRateLimit  = `{"errors":[{"type":"RATE_LIMITED","message":"API rate limit exceeded for user ID 1."}]}`
	githubIssueMade  = `{"data":{"createIssue":{"issue":{"number":7}}}}`
	githubJSONHeader = "application/json; charset=utf-8"
)

// openIssue runs the mutation once under the action, through an
// http.Client over the GitHub preset, as a worker's job does, and returns
// what Next says of it.
func openIssue(t *testing.T, c *http.Client, f *fake) (retrybudget.Step, retrybudget.Outcome) {
	t.Helper()
	ctx := retrybudget.WithAction(context.Background(), retrybudget.Action{Tenant: "acme", Operation: "open-issue", Key: "incident-7"})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+githubGraphQL, strings.NewReader(githubMutation))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer ghp_test")
	resp, err := c.Do(req)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return retrybudget.Next(resp, err)
}

func TestGitHubGraphQLRateLimitIsCapacity(t *testing.T) {
	reset, resetAt := epochIn(10 * time.Minute)
	for _, tc := range []struct {
		name   string
		header []string
		body   string
		// wantAt is when Next says to retry; zero means a minute on.
		wantAt time.Time
	}{
		{"remaining 0", []string{"x-ratelimit-remaining", "0", "x-ratelimit-reset", reset}, githubRateLimit, resetAt},
		{"data null", []string{"x-ratelimit-remaining", "0", "x-ratelimit-reset", reset},
			`{"data":null,"errors":[{"type":"RATE_LIMITED","message":"API rate limit exceeded for user ID 1."}]}`, resetAt},
		// GitHub has been seen to answer with the error code as the type
		// (githubkit #271, octokit plugin-throttling #848), and with a
		// remaining count above 0 (octokit plugin-throttling #632).
		{"type RATE_LIMIT", []string{"x-ratelimit-remaining", "0", "x-ratelimit-reset", reset},
			`{"errors":[{"type":"RATE_LIMIT","code":"graphql_rate_limit","message":"API rate limit already exceeded for user ID 1."}]}`, resetAt},
		{"remaining above 0", []string{"x-ratelimit-remaining", "3", "x-ratelimit-reset", reset}, githubRateLimit, resetAt},
		{"no reset", nil, githubRateLimit, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limited := reply{status: 200, header: append([]string{"Content-Type", githubJSONHeader}, tc.header...), body: tc.body}
			made := reply{status: 200, header: []string{"Content-Type", githubJSONHeader}, body: githubIssueMade}
			f := newFake(t, limited, made)
			store := ledger.NewMemory(ledger.MemoryConfig{})
			c := atFake(t, f, []retrybudget.Route{presets.GitHub()}, func(cfg *retrybudget.Config) { cfg.Ledger.Store = store })
			start := time.Now()
			step, out := openIssue(t, c, f)
			want := tc.wantAt
			if want.IsZero() {
				want = start.Add(time.Minute)
			}
			if step != retrybudget.StepRetry || out.Class != retrybudget.ClassCapacity || !near(out.RetryAt, want, 2*time.Second) {
				t.Fatalf("step %v, class %v, reason %v, retry at %v; want retry at about %v, capacity", step, out.Class, out.Reason, out.RetryAt, want)
			}
			if f.arrivals() != 1 {
				t.Fatalf("%d arrivals; want 1: the limit is not waited out in the call", f.arrivals())
			}
			// The action is not completed with the refusal: run again (at
			// RetryAt, as Next says), the mutation is sent and runs.
			step, out = openIssue(t, c, f)
			if step != retrybudget.StepDone || out.Replayed || f.arrivals() != 2 {
				t.Fatalf("rerun: step %v, replayed %v, %d arrivals; want the mutation sent again and done", step, out.Replayed, f.arrivals())
			}
		})
	}
}

func TestGitHubGraphQLErrorsBesideDataAreNotCapacity(t *testing.T) {
	// A 200 with data and errors may have run part of the query: it is
	// the answer, whatever the errors say, and a rerun replays it.
	reset, _ := epochIn(10 * time.Minute)
	f := newFake(t, reply{status: 200, header: []string{"Content-Type", githubJSONHeader, "x-ratelimit-remaining", "0", "x-ratelimit-reset", reset},
		body: `{"data":{"createIssue":{"issue":{"number":7}}},"errors":[{"type":"RATE_LIMITED","message":"API rate limit exceeded for user ID 1."}]}`})
	store := ledger.NewMemory(ledger.MemoryConfig{})
	c := atFake(t, f, []retrybudget.Route{presets.GitHub()}, func(cfg *retrybudget.Config) { cfg.Ledger.Store = store })
	step, out := openIssue(t, c, f)
	if step != retrybudget.StepDone || out.Class != retrybudget.ClassSuccess {
		t.Fatalf("step %v, class %v, reason %v; want done, success", step, out.Class, out.Reason)
	}
	step, out = openIssue(t, c, f)
	if step != retrybudget.StepDone || !out.Replayed || f.arrivals() != 1 {
		t.Fatalf("rerun: step %v, replayed %v, %d arrivals; want the stored answer replayed", step, out.Replayed, f.arrivals())
	}
}

func TestGitHubGraphQLRateLimitPausesTheGraphQLResource(t *testing.T) {
	// The limit is the graphql resource's: its boundary pauses until the
	// reset, not the credential's REST resources.
	reset, resetAt := epochIn(10 * time.Minute)
	f := newFake(t, reply{status: 200, header: []string{"Content-Type", githubJSONHeader, "x-ratelimit-remaining", "3", "x-ratelimit-reset", reset}, body: githubRateLimit})
	lim := &recorder{}
	c := atFake(t, f, []retrybudget.Route{presets.GitHub()}, func(cfg *retrybudget.Config) { cfg.Limiter = lim })
	openIssue(t, c, f)
	boundaries, cools := lim.recorded()
	if len(cools) != 1 || !cools[0].until.Equal(resetAt) || cools[0].boundary != boundaries[0] || !strings.HasSuffix(boundaries[0], "|graphql") {
		t.Fatalf("cooldowns %+v on boundaries %q; want one until the reset on the graphql boundary", cools, boundaries)
	}
}

func TestGitHubGraphQLAnswerIsLeftForTheCaller(t *testing.T) {
	// The body is read ahead to find the errors, never taken.
	f := newFake(t, reply{status: 200, header: []string{"Content-Type", githubJSONHeader}, body: githubRateLimit})
	c := atFake(t, f, []retrybudget.Route{presets.GitHub()}, nil)
	resp, body, out := call(t.Context(), t, c, http.MethodPost, f.srv.URL+githubGraphQL)
	if resp == nil || body != githubRateLimit || out.Class != retrybudget.ClassCapacity {
		t.Fatalf("body %q, class %v; want the whole rate limit answer, capacity", body, out.Class)
	}
}
