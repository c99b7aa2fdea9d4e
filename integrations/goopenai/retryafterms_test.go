package goopenai_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/integrations/fakes"
	"github.com/retrybudget/retrybudget/integrations/internal/sdktest"
)

// unavailableFor makes p answer its first n effect calls with 503 and
// retry-after-ms: 100, applying nothing; n < 0 means every call.
func unavailableFor(p *fakes.Provider, n int) {
	var seen int // guarded by p's lock: fault runs under it
	p.Fail(func(r *http.Request) *fakes.Reply {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			return nil
		}
		seen++
		if n >= 0 && seen > n {
			return nil
		}
		return &fakes.Reply{Status: http.StatusServiceUnavailable, Header: http.Header{"Retry-After-Ms": {"100"}}}
	})
}

// TestChatThrough503WithRetryAfterMs: OpenAI answering a chat completion
// 503 with retry-after-ms has said when to come back, so it has refused
// the request: go-openai's call is sent again at that time and gets the
// completion (3 arrivals, 1 effect) instead of ending uncertain after one
// arrival; in a longer outage it reaches the route's MaxAttempts and ends
// as not applied.
func TestChatThrough503WithRetryAfterMs(t *testing.T) {
	t.Run("recovers", func(t *testing.T) {
		p := sdktest.Start(t, sdk)
		unavailableFor(p, 2)
		tr := sdktest.NewTransport(sdk, p, retrybudget.Config{})
		ctx, out := retrybudget.CaptureOutcome(context.Background())
		if err := call(ctx, p.URL(), tr, false); err != nil {
			t.Fatalf("call: %v", err)
		}
		o, _ := out.Last()
		if n, e := len(p.Targets()), p.Effects(); n != 3 || e != 1 || o.Attempts != 3 {
			t.Fatalf("arrivals %d, effects %d, outcome %+v; want 3 arrivals, 1 effect, 3 attempts", n, e, o)
		}
	})
	t.Run("outage", func(t *testing.T) {
		p := sdktest.Start(t, sdk)
		unavailableFor(p, -1)
		tr := sdktest.NewTransport(sdk, p, retrybudget.Config{})
		ctx, out := retrybudget.CaptureOutcome(context.Background())
		if err := call(ctx, p.URL(), tr, false); err == nil {
			t.Fatal("call succeeded in an outage")
		}
		o, _ := out.Last()
		max := sdk.Preset().Config.MaxAttempts
		if n := len(p.Targets()); n != max || o.MaybeApplied || errors.Is(o.Reason, retrybudget.ErrUncertain) {
			t.Fatalf("arrivals %d, outcome %+v; want %d arrivals, not applied, not uncertain", n, o, max)
		}
	})
}
