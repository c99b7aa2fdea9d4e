package github_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-github/v84/github"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/integrations/fakes"
	rbgithub "github.com/retrybudget/retrybudget/integrations/github"
	"github.com/retrybudget/retrybudget/integrations/internal/sdktest"
	"github.com/retrybudget/retrybudget/presets"
)

// sdk is go-github under test; it makes no retries of its own.
var sdk = sdktest.SDK{Name: "go-github", Fake: fakes.GitHub, Preset: presets.GitHub, Call: call}

// call creates one issue through go-github.
func call(ctx context.Context, url string, rt http.RoundTripper, _ bool) error {
	c, err := rbgithub.NewClient("ghp_test", url, rt)
	if err != nil {
		return err
	}
	_, _, err = c.Issues.Create(ctx, "o", "r", &github.IssueRequest{Title: github.Ptr("t")})
	return err
}

func TestCaptureOutcomeWaitTooLong(t *testing.T) { sdktest.CaptureOutcomeWaitTooLong(t, sdk) }
func TestCapturedNext(t *testing.T)              { sdktest.CapturedNext(t, sdk) }
func TestNoKeyHeaderWhereNoneIsDocumented(t *testing.T) {
	sdktest.NoKeyHeaderWhereNoneIsDocumented(t, sdk)
}
func TestJobRunTwiceOneEffect(t *testing.T)       { sdktest.JobRunTwiceOneEffect(t, sdk) }
func TestOutageOneCallArrivals(t *testing.T)      { sdktest.OutageOneCallArrivals(t, sdk) }
func TestOutageFleetAmplification(t *testing.T)   { sdktest.OutageFleetAmplification(t, sdk) }
func TestWorkerKilledAfterTheEffect(t *testing.T) { sdktest.WorkerKilledAfterTheEffect(t, sdk) }
func TestSDKWorkerChild(t *testing.T)             { sdktest.WorkerChild(t, sdk) }

// TestGitHubSecondaryLimitEndsAtOnce: a secondary rate limit without
// retry-after (a 403 naming the secondary limit docs) asks for a minute;
// the GitHub preset ends the call at once with RetryAt, with no deadline
// at all, instead of blocking a minute in RoundTrip.
func TestGitHubSecondaryLimitEndsAtOnce(t *testing.T) {
	p := sdktest.Start(t, sdk)
	p.Fail(func(*http.Request) *fakes.Reply {
		return &fakes.Reply{Status: http.StatusForbidden,
			Body: `{"message":"You have exceeded a secondary rate limit.","documentation_url":"https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`}
	})
	tr := sdktest.NewTransport(sdk, p, retrybudget.Config{})
	ctx, out := retrybudget.CaptureOutcome(context.Background())
	start := time.Now()
	if err := call(ctx, p.URL(), tr, true); err == nil {
		t.Fatal("call succeeded")
	}
	if el := time.Since(start); el > time.Second {
		t.Fatalf("call took %v, want an immediate end", el)
	}
	o, _ := out.Last()
	if !errors.Is(o.Reason, retrybudget.ErrWaitTooLong) || o.RetryAt.Sub(start) < 59*time.Second {
		t.Fatalf("outcome %+v, want ErrWaitTooLong with RetryAt a minute on", o)
	}
}

// A worker reuses one client for its jobs. After an answer that says the
// quota is spent until a reset (x-ratelimit-remaining: 0), or that a
// secondary limit applies (retry-after), the next job's call still reaches
// the Transport: go-github's own check, which refuses it sending nothing,
// is off, and the job's Next says when to come back (StepRetry), never
// StepStop, which drops a job that succeeds after the reset.
func TestNextJobAfterARateLimitAnswerIsRetried(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply func(n int) *fakes.Reply
	}{
		{"quota spent", func(n int) *fakes.Reply {
			h := http.Header{}
			h.Set("X-RateLimit-Limit", "5000")
			h.Set("X-RateLimit-Remaining", "0")
			h.Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Minute).Unix(), 10))
			h.Set("X-RateLimit-Resource", "core")
			if n > 1 { // the quota is spent: GitHub refuses the next one
				return &fakes.Reply{Status: http.StatusForbidden, Header: h,
					Body: `{"message":"API rate limit exceeded","documentation_url":"https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"}`}
			}
			return &fakes.Reply{Status: http.StatusCreated, Header: h, AfterEffect: true,
				Body: `{"id":1,"number":1,"title":"t","state":"open"}`}
		}},
		{"secondary limit", func(int) *fakes.Reply {
			h := http.Header{}
			h.Set("Retry-After", "60")
			return &fakes.Reply{Status: http.StatusForbidden, Header: h,
				Body: `{"message":"You have exceeded a secondary rate limit.","documentation_url":"https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := sdktest.Start(t, sdk)
			var posts atomic.Int32
			p.Fail(func(r *http.Request) *fakes.Reply {
				if r.Method != http.MethodPost {
					return nil
				}
				return tc.reply(int(posts.Add(1)))
			})
			c, err := rbgithub.NewClient("ghp_test", p.URL(), sdktest.NewTransport(sdk, p, retrybudget.Config{}))
			if err != nil {
				t.Fatal(err)
			}
			job := func(key string) (retrybudget.Step, retrybudget.Outcome, error) {
				ctx, out := retrybudget.CaptureOutcome(retrybudget.WithAction(context.Background(),
					retrybudget.Action{Tenant: "acme", Operation: "issue", Key: key}))
				_, _, err := c.Issues.Create(ctx, "o", "r", &github.IssueRequest{Title: github.Ptr("t")})
				step, o := out.Next(err)
				return step, o, err
			}
			job("job-1")
			before := posts.Load()
			step, o, err := job("job-2")
			if posts.Load() == before {
				t.Fatalf("job 2 never reached the provider: %v", err)
			}
			if step != retrybudget.StepRetry || o.RetryAt.IsZero() {
				t.Fatalf("job 2: Next %v, RetryAt %v (SDK error %v); want StepRetry with when to come back", step, o.RetryAt, err)
			}
		})
	}
}
