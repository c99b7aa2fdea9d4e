package github_test

import (
	"context"
	"errors"
	"net/http"
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
