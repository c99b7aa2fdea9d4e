package presets_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/presets"
)

// TestOpenAI503NamingATimeIsComeBackLater: a 503 that says when to come
// back (retry-after-ms, or a Retry-After the preset reads, decimal seconds
// included) is a refusal, not an answer that may have been applied, so an
// unkeyed chat POST is retried at that time; a 503 that names no time may
// come from a gateway after the upstream applied the request.
func TestOpenAI503NamingATimeIsComeBackLater(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name         string
		header       []string
		maybeApplied bool
		retryAt      time.Time
		hint         retrybudget.RetryHint
	}{
		{"retry-after-ms", []string{"retry-after-ms", "250"}, false, now.Add(250 * time.Millisecond), retrybudget.HintNone},
		{"decimal Retry-After", []string{"retry-after", "1.5"}, false, now.Add(1500 * time.Millisecond), retrybudget.HintNone},
		{"whole Retry-After", []string{"retry-after", "2"}, false, now.Add(2 * time.Second), retrybudget.HintNone},
		{"no time named", nil, true, time.Time{}, retrybudget.HintNone},
		{"invalid retry-after-ms", []string{"retry-after-ms", "soon"}, true, time.Time{}, retrybudget.HintNone},
		{"x-should-retry false still stops it", []string{"retry-after-ms", "250", "x-should-retry", "false"}, false, now.Add(250 * time.Millisecond), retrybudget.HintNoRetry},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, openAIChat, strings.NewReader("{}"))
			resp := &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{}, Body: http.NoBody, Request: req}
			for i := 0; i+1 < len(tt.header); i += 2 {
				resp.Header.Set(tt.header[i], tt.header[i+1])
			}
			cls := presets.OpenAI().Config.Classifier.Classify(&retrybudget.AttemptResult{Request: req, Response: resp, Now: now})
			if cls.Class != retrybudget.ClassCapacity || cls.MaybeApplied != tt.maybeApplied || !cls.RetryAt.Equal(tt.retryAt) || cls.Hint != tt.hint {
				t.Fatalf("class %v, maybe applied %v, RetryAt %v, hint %v; want capacity, %v, %v, %v",
					cls.Class, cls.MaybeApplied, cls.RetryAt, cls.Hint, tt.maybeApplied, tt.retryAt, tt.hint)
			}
		})
	}
}

// TestOpenAI503WithRetryAfterMsIsRetried: through the Transport, an
// unkeyed chat POST answered 503 with retry-after-ms is sent again and
// gets the provider's answer, instead of ending uncertain after one try.
func TestOpenAI503WithRetryAfterMsIsRetried(t *testing.T) {
	f := newFake(t, reply{status: 503, header: []string{"retry-after-ms", "3"}}, reply{status: 200})
	c := client(t, f, presets.OpenAI(), nil, nil)
	resp, _, out := call(context.Background(), t, c, "POST", openAIChat)
	if resp.StatusCode != 200 || out.Attempts != 2 {
		t.Fatalf("status %d after %d attempts (reason %v); want 200 after 2", resp.StatusCode, out.Attempts, out.Reason)
	}
}
