package presets

import (
	"net/http"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/limiter"
	"github.com/retrybudget/retrybudget/rateheader"
)

// OpenAI returns the policy for the OpenAI API (api.openai.com). It suits
// other OpenAI-style APIs, whose SDKs share the same retry headers: set
// Host on the returned copy.
//
// Sources: https://platform.openai.com/docs/guides/rate-limits and
// https://platform.openai.com/docs/guides/error-codes; retry-after-ms and
// x-should-retry are read by the official SDKs (openai-python,
// openai-node), not described in the guides.
//
//   - retry-after-ms, when valid, sets RetryAt and is preferred over
//     Retry-After, which is read otherwise (decimal seconds accepted), as
//     the SDKs do. A 503 that names a time in either header is "come back
//     later": not applied, so even an unkeyed POST is retried at that
//     time; a 503 that names none may have been applied (DefaultClassifier).
//   - x-should-retry: true is HintRetry, false is HintNoRetry: the server's
//     word on whether a failed request is worth repeating overrides the
//     status, as in the SDKs.
//   - A 429 whose JSON error has type or code insufficient_quota means the
//     account is out of credit or past its spending limit: a business
//     answer, not retried, unless x-should-retry says otherwise (the error
//     codes guide says to buy credits or raise the limit, not to wait).
//   - x-ratelimit-remaining-requests and x-ratelimit-remaining-tokens at 0
//     pause the boundary until x-ratelimit-reset-requests or
//     x-ratelimit-reset-tokens, which are durations such as "6m0s".
//   - Key: the API documents no idempotency key, so none is sent
//     (OmitKey) unless an SDK or the caller sets one, and none is honoured: a
//     POST that got a 5xx is repeated only when x-should-retry: true says
//     so (our choice; the SDKs repeat 5xx, which may bill twice). 409 is a
//     business answer unless x-should-retry: true.
//   - Three attempts, 500ms doubling up to 8s (the SDKs' defaults: two
//     retries, a 0.5s first delay, 8s at most).
//   - Boundary: the host, a hash of the Authorization header (the API key)
//     and the endpoint path. Limits are per organization and project and
//     per model; the model is in the request body, out of a Boundary's
//     reach, so a spent quota of one model pauses the endpoint for all
//     models of that key.
func OpenAI() retrybudget.Route {
	return retrybudget.Route{
		Name: "openai",
		Host: "api.openai.com",
		Config: retrybudget.Config{
			OmitKey:     true,
			MaxAttempts: 3,
			BaseDelay:   500 * time.Millisecond,
			MaxDelay:    8 * time.Second,
			Boundary:    scoped(limiter.ByCredential(), func(r *http.Request) string { return r.URL.Path }),
			Classifier: rateheader.Classifier{Next: openAIClassifier{}, Families: []rateheader.XRateLimit{
				{Suffix: "-Requests", Mode: rateheader.ResetDuration},
				{Suffix: "-Tokens", Mode: rateheader.ResetDuration},
			}},
		},
	}
}

// openAIClassifier applies retry-after-ms, x-should-retry and the
// insufficient_quota rule on top of DefaultClassifier.
type openAIClassifier struct{}

// Classify implements retrybudget.Classifier.
func (openAIClassifier) Classify(a *retrybudget.AttemptResult) retrybudget.Classification {
	cls := retrybudget.DefaultClassifier{}.Classify(a)
	resp := a.Response
	if resp == nil || cls.Class == retrybudget.ClassSuccess {
		return cls
	}
	named := true
	if at, ok := rateheader.ParseRetryAfterMs(resp.Header, a.Now); ok {
		cls.RetryAt = at
	} else if at, ok := rateheader.ParseRetryAfter(resp.Header, a.Now); ok {
		cls.RetryAt = at
	} else {
		named = false
	}
	if named && resp.StatusCode == http.StatusServiceUnavailable {
		// DefaultClassifier's rule, over the times this preset reads: a
		// 503 that says when to come back is the provider refusing the
		// request (RFC 9110 §15.6.4), not a gateway answering after the
		// upstream may have applied it.
		cls.MaybeApplied = false
	}
	cls.Hint = boolHint(resp.Header.Get("X-Should-Retry"))
	if cls.Hint == retrybudget.HintNone && resp.StatusCode == http.StatusTooManyRequests && insufficientQuota(resp) {
		cls.Class, cls.Hint, cls.RetryAt = retrybudget.ClassBusiness, retrybudget.HintNoRetry, time.Time{}
	}
	return cls
}

// insufficientQuota reports whether the JSON error body says the account
// has run out of quota: {"error": {"type": "insufficient_quota", ...}} or
// the same in code.
func insufficientQuota(resp *http.Response) bool {
	var body struct {
		Error struct {
			Type string `json:"type"`
			Code any    `json:"code"`
		} `json:"error"`
	}
	if !peekJSON(resp, &body) {
		return false
	}
	code, _ := body.Error.Code.(string)
	return body.Error.Type == "insufficient_quota" || code == "insufficient_quota"
}
