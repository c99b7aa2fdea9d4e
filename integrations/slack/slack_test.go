package slack_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/integrations/fakes"
	"github.com/retrybudget/retrybudget/integrations/internal/sdktest"
	rbslack "github.com/retrybudget/retrybudget/integrations/slack"
	"github.com/retrybudget/retrybudget/limiter"
	"github.com/retrybudget/retrybudget/presets"
)

// sdk is slack-go under test; it makes no retries of its own unless told.
var sdk = sdktest.SDK{Name: "slack-go", Fake: fakes.Slack, Preset: presets.Slack, Call: callAs("xoxb-workspace-a")}

// callAs returns a call posting one message through slack-go with token.
func callAs(token string) func(context.Context, string, http.RoundTripper, bool) error {
	return func(ctx context.Context, url string, rt http.RoundTripper, _ bool) error {
		c := rbslack.NewClient(token, url+"/api/", rt)
		_, _, err := c.PostMessageContext(ctx, "C1", slack.MsgOptionText("hi", false))
		return err
	}
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

// TestSlackBoundaryIsTheWorkspaceToken: slack-go sends the token in the
// form body; workspace A's 429 (Retry-After 5) pauses A alone, never B.
func TestSlackBoundaryIsTheWorkspaceToken(t *testing.T) {
	p := sdktest.Start(t, sdk)
	p.Fail(func(r *http.Request) *fakes.Reply {
		if err := r.ParseForm(); err == nil && r.PostForm.Get("token") == "xoxb-workspace-a" {
			return &fakes.Reply{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"5"}}}
		}
		return nil
	})
	lim, err := limiter.NewLocal(limiter.LocalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	tr := sdktest.NewTransport(sdk, p, retrybudget.Config{Limiter: lim})
	ctxA, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := callAs("xoxb-workspace-a")(ctxA, p.URL(), tr, true); err == nil {
		t.Fatal("workspace A succeeded through its 429")
	}
	start := time.Now()
	if err := callAs("xoxb-workspace-b")(context.Background(), p.URL(), tr, true); err != nil {
		t.Fatalf("workspace B: %v", err)
	}
	if el := time.Since(start); el > time.Second {
		t.Fatalf("workspace B waited %v behind workspace A's pause", el)
	}
	// A is paused: its next call is refused locally, nothing sent.
	before := len(p.Arrivals())
	ctxA2, cancel2 := context.WithTimeout(context.Background(), time.Second)
	defer cancel2()
	ctxA2, out := retrybudget.CaptureOutcome(ctxA2)
	_ = callAs("xoxb-workspace-a")(ctxA2, p.URL(), tr, true)
	if o, _ := out.Last(); !errors.Is(o.Reason, retrybudget.ErrRateLimited) {
		t.Errorf("workspace A again: Reason %v, want ErrRateLimited", o.Reason)
	}
	if n := len(p.Arrivals()); n != before {
		t.Errorf("paused workspace A sent %d requests", n-before)
	}
}
