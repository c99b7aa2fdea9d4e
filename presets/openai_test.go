package presets_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/presets"
)

const openAIChat = "https://api.openai.com/v1/chat/completions"

func TestOpenAIRetryAfterMsIsPreferred(t *testing.T) {
	// Retry-After alone (5s) would exceed MaxWait (100ms) and end the
	// call; retry-after-ms (3ms) is preferred, so the call is retried.
	f := newFake(t, reply{status: 429, header: []string{"retry-after", "5", "retry-after-ms", "3"}}, reply{status: 200})
	c := client(t, f, presets.OpenAI(), nil, nil)
	resp, _, out := call(t.Context(), t, c, "POST", openAIChat)
	if resp.StatusCode != 200 || out.Attempts != 2 {
		t.Fatalf("status %d after %d attempts (reason %v); want 200 after 2", resp.StatusCode, out.Attempts, out.Reason)
	}
}

func TestOpenAIRetryAfterWithoutMs(t *testing.T) {
	f := newFake(t, reply{status: 429, header: []string{"retry-after", "1.5"}})
	c := client(t, f, presets.OpenAI(), nil, nil)
	start := time.Now()
	_, _, out := call(t.Context(), t, c, "POST", openAIChat)
	if !errors.Is(out.Reason, retrybudget.ErrWaitTooLong) || !near(out.RetryAt, start.Add(1500*time.Millisecond), 300*time.Millisecond) {
		t.Fatalf("reason %v, RetryAt start+%v; want ErrWaitTooLong at the decimal Retry-After", out.Reason, out.RetryAt.Sub(start))
	}
}

func TestOpenAIShouldRetry(t *testing.T) {
	tests := []struct {
		name     string
		method   string
		first    reply
		attempts int
		reason   error
	}{
		{"false stops a 500 on a GET", "GET", reply{status: 500, header: []string{"x-should-retry", "false"}}, 1, retrybudget.ErrRejected},
		{"false stops a 429", "POST", reply{status: 429, header: []string{"x-should-retry", "false"}}, 1, retrybudget.ErrRejected},
		{"true repeats a 500 on an unkeyed POST", "POST", reply{status: 500, header: []string{"x-should-retry", "true"}}, 2, nil},
		{"true repeats a 409", "POST", reply{status: 409, header: []string{"x-should-retry", "true"}}, 2, nil},
		{"no header: a 500 on a POST is not repeated", "POST", reply{status: 500}, 1, retrybudget.ErrUncertain},
		{"no header: a 409 is business", "POST", reply{status: 409}, 1, retrybudget.ErrRejected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.first, reply{status: 200})
			c := client(t, f, presets.OpenAI(), nil, nil)
			_, _, out := call(t.Context(), t, c, tt.method, openAIChat)
			if out.Attempts != tt.attempts || !errors.Is(out.Reason, tt.reason) {
				t.Fatalf("attempts %d, reason %v; want %d, %v", out.Attempts, out.Reason, tt.attempts, tt.reason)
			}
		})
	}
}

func TestOpenAIInsufficientQuotaIsBusiness(t *testing.T) {
	body := `{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`
	f := newFake(t, reply{status: 429, header: []string{"Content-Type", "application/json"}, body: body})
	lim := &recorder{}
	c := client(t, f, presets.OpenAI(), lim, nil)
	_, got, out := call(t.Context(), t, c, "POST", openAIChat)
	if out.Attempts != 1 || out.Class != retrybudget.ClassBusiness || !errors.Is(out.Reason, retrybudget.ErrRejected) {
		t.Fatalf("attempts %d, class %v, reason %v; want one rejected business attempt", out.Attempts, out.Class, out.Reason)
	}
	if got != body {
		t.Fatalf("body %q; want it untouched", got)
	}
	if _, cools := lim.recorded(); len(cools) != 0 {
		t.Fatalf("cooldowns %+v; want none: waiting does not buy credit", cools)
	}
}

func TestOpenAIRateLimitFieldsPauseTheBoundary(t *testing.T) {
	f := newFake(t, reply{status: 200, header: []string{
		"x-ratelimit-limit-requests", "5000", "x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "20s",
		"x-ratelimit-limit-tokens", "160000", "x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "6m0s",
	}})
	lim := &recorder{}
	c := client(t, f, presets.OpenAI(), lim, nil)
	start := time.Now()
	call(t.Context(), t, c, "POST", openAIChat, "Authorization", "Bearer sk-test")
	boundaries, cools := lim.recorded()
	if len(cools) != 1 || !near(cools[0].until, start.Add(6*time.Minute), time.Second) {
		t.Fatalf("cooldowns %+v; want one until the later reset, 6m", cools)
	}
	if !strings.HasSuffix(boundaries[0], "|/v1/chat/completions") || strings.Contains(boundaries[0], "sk-test") {
		t.Fatalf("boundary %q; want the endpoint and no raw key", boundaries[0])
	}
}
