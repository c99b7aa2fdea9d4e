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
// Sources (read 2026-12-03): https://platform.openai.com/docs/guides/rate-limits and
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
//   - A 429 whose JSON error has a billing type or code
//     (insufficient_quota, credit_balance_exhausted,
//     organization_spend_limit_exceeded, project_spend_limit_exceeded,
//     organization_usage_limit_exceeded) means the organization or project
//     is out of credit or past a spending or usage limit: a business
//     answer, not retried, unless x-should-retry says otherwise (the error
//     codes guide says to buy credits or raise the limit, not to wait).
//   - x-ratelimit-remaining-requests and x-ratelimit-remaining-tokens at 0
//     pause the boundary until x-ratelimit-reset-requests or
//     x-ratelimit-reset-tokens, which are durations such as "6m0s".
//   - Key: the API documents no idempotency key, so none is sent
//     (OmitKey) unless an SDK or the caller sets one, and none is honoured: a
//     POST that got a 5xx is repeated only when x-should-retry: true says
//     so. 409 is a business answer unless x-should-retry: true.
//   - A POST that got a 503 with no retry hint (no retry-after-ms,
//     Retry-After or x-should-retry) is not repeated, where the SDKs repeat
//     it (our choice): a gateway may answer 503 after the model ran, so a
//     repeat may bill a second completion, and for a tool call or an
//     Assistants run, act twice. The cost is a call that fails at once
//     (ErrUncertain) during an outage the SDK would have ridden out; to
//     trade the other way, wrap Classifier on the copy to give that 503
//     HintRetry.
//   - Three attempts, 500ms doubling up to 8s (the SDKs' defaults: two
//     retries, a 0.5s first delay, 8s at most).
//   - Boundary: the project and the endpoint path. OpenAI limits per
//     organization and project, and per model. The project is the
//     OpenAI-Project header when the request carries one; otherwise the
//     host and a hash of the Authorization header (the API key) stand for
//     it, so two keys of one project get two boundaries: for those, set
//     OpenAIProjectBoundary(name) on the copy. The model is in the request
//     body, out of a Boundary's reach, so a spent quota of one model
//     pauses the endpoint for all models of the project.
//   - ActionScope: the OpenAI-Organization and OpenAI-Project headers,
//     which pick the organization and project one API key acts for: one
//     Action sent for two projects is two actions.
func OpenAI() retrybudget.Route {
	return retrybudget.Route{
		Name: "openai",
		Host: "api.openai.com",
		Config: retrybudget.Config{
			OmitKey:     true,
			MaxAttempts: 3,
			BaseDelay:   500 * time.Millisecond,
			MaxDelay:    8 * time.Second,
			Boundary:    scoped(openAIProject, urlPath),
			ActionScope: headerScope(false, "OpenAI-Organization", "OpenAI-Project"),
			Classifier: rateheader.Classifier{Next: openAIClassifier{}, Families: []rateheader.XRateLimit{
				{Suffix: "-Requests", Mode: rateheader.ResetDuration},
				{Suffix: "-Tokens", Mode: rateheader.ResetDuration},
			}},
		},
	}
}

// openAIClassifier applies retry-after-ms, x-should-retry and the
// billing rule on top of DefaultClassifier.
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
	if cls.Hint == retrybudget.HintNone && resp.StatusCode == http.StatusTooManyRequests && billingStop(resp) {
		cls.Class, cls.Hint, cls.RetryAt = retrybudget.ClassBusiness, retrybudget.HintNoRetry, time.Time{}
	}
	return cls
}

// openAIBillingCode reports whether s, an error type or code of a 429,
// says the organization or project may not spend more, from OpenAI's error
// codes guide and the SDKs' error types (read 2026-12-03).
func openAIBillingCode(s string) bool {
	switch s {
	case "insufficient_quota", "credit_balance_exhausted", "organization_spend_limit_exceeded",
		"project_spend_limit_exceeded", "organization_usage_limit_exceeded":
		return true
	}
	return false
}

// billingStop reports whether the JSON error body names a billing stop in
// its type or code: {"error": {"type": "insufficient_quota", ...}}.
func billingStop(resp *http.Response) bool {
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
	return openAIBillingCode(body.Error.Type) || openAIBillingCode(code)
}

// OpenAIProjectBoundary returns the OpenAI preset's Boundary with the
// project named by project, a name of the caller's choice (such as the
// project id, "proj_abc"), in place of the API key: every key of the
// project then shares its limits, as OpenAI meters them.
func OpenAIProjectBoundary(project string) limiter.Boundary {
	return scoped(limiter.Fixed("openai:project:"+project), urlPath)
}

// openAIProject is the OpenAI boundary's project part: the OpenAI-Project
// header, which names a project and is no secret, or else the host and a
// hash of the API key.
func openAIProject(r *http.Request) string {
	if p := r.Header.Get("OpenAI-Project"); p != "" {
		return "openai:project:" + p
	}
	return limiter.ByCredential()(r)
}

// urlPath scopes a boundary by the request's URL path.
func urlPath(r *http.Request) string { return r.URL.Path }
