package presets

import (
	"net/http"
	"strings"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/limiter"
)

// Stripe returns the policy for the Stripe API (api.stripe.com).
//
// Sources (read 2026-12-03): https://docs.stripe.com/error-low-level#idempotency,
// https://docs.stripe.com/api/idempotent_requests and
// https://docs.stripe.com/rate-limits.
//
//   - Key: Idempotency-Key, honoured. Stripe's v1 API saves the status and
//     body of the first request made with a key once the endpoint starts
//     executing, and replays them for later requests with the same key, so
//     a POST that may have been applied can be repeated with its key.
//     "Keys are eligible to be removed from the system automatically after
//     they're at least 24 hours old" (idempotent_requests), so KeyRetention
//     is 24 hours: the ledger never re-sends an older action under its key.
//   - Stripe-Should-Retry: true is HintRetry and false is HintNoRetry:
//     Stripe's own word on whether the request is worth repeating
//     overrides the status (error-low-level).
//   - "We save results only after the execution of an endpoint begins. If
//     incoming parameters fail validation, or the request conflicts with
//     another that's executing concurrently, no idempotent result is
//     saved" (idempotency). So these answers are Unsaved: a 400 whose
//     error type is invalid_request_error (a validation failure), a 409
//     whose error code is idempotency_key_in_use or lock_timeout (Stripe's
//     own concurrent-request conflicts), and a 429. The ledger records them
//     as failed without effect, not as the action's answer: a corrected
//     request under the same Action is sent, under the same key, which
//     Stripe takes as new work. A 400 Stripe did save (an error raised
//     once the endpoint ran) is safe to take as unsaved too: the key is
//     honoured, so a re-send gets Stripe's saved answer back and a changed
//     request gets idempotency_error, never a second effect.
//   - 409 Conflict to a keyed request means another request with the key
//     is still being processed: DefaultClassifier classes it server, so it
//     is retried under the same key and never stored as the action's
//     answer, unless Stripe-Should-Retry: false says it cannot succeed
//     (such as a key reused with other parameters).
//   - 429 is a capacity answer, retried with exponential backoff as the
//     rate-limits page advises; the limiter rejects requests before
//     Stripe's idempotency layer, so a 429 did nothing.
//   - ActionScope: the Stripe-Account header (Connect: the platform's key
//     acting for a connected account) and Stripe-Context. One Action sent
//     for acct_1 and then for acct_2 is two actions, each with an
//     idempotency key and ledger record of its own, as Stripe keeps the
//     accounts apart.
//   - Three attempts, 500ms doubling up to 5s (our choice, in line with
//     the small retry counts and sub-second first delays of Stripe's
//     SDKs).
//   - Boundary: the host and a hash of the Authorization header (the API
//     key). Stripe meters per account; set limiter.Fixed(account) when
//     several keys share one account.
func Stripe() retrybudget.Route {
	return retrybudget.Route{
		Name: "stripe",
		Host: "api.stripe.com",
		Config: retrybudget.Config{
			KeyHeader:    "Idempotency-Key",
			KeysHonoured: true,
			KeyRetention: 24 * time.Hour,
			MaxAttempts:  3,
			BaseDelay:    500 * time.Millisecond,
			MaxDelay:     5 * time.Second,
			Boundary:     limiter.ByCredential(),
			ActionScope:  headerScope(false, "Stripe-Account", "Stripe-Context"),
			Classifier:   stripeClassifier{},
		},
	}
}

// stripeClassifier applies Stripe-Should-Retry on top of
// DefaultClassifier, and marks the answers Stripe saves nothing for.
type stripeClassifier struct{}

// Classify implements retrybudget.Classifier.
func (stripeClassifier) Classify(a *retrybudget.AttemptResult) retrybudget.Classification {
	cls := retrybudget.DefaultClassifier{}.Classify(a)
	if a.Response == nil || cls.Class == retrybudget.ClassSuccess {
		return cls
	}
	cls.Hint = boolHint(a.Response.Header.Get("Stripe-Should-Retry"))
	cls.Unsaved = stripeUnsaved(a.Response)
	return cls
}

// stripeUnsaved reports whether resp is an answer Stripe saves no
// idempotent result for: the request failed validation or met a
// concurrent one before the endpoint began executing, or was rate
// limited. The error body reads {"error": {"type": ..., "code": ...}}.
func stripeUnsaved(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusTooManyRequests:
		return true
	case http.StatusBadRequest, http.StatusConflict:
	default:
		return false
	}
	var body struct {
		Error struct {
			Type string `json:"type"`
			Code string `json:"code"`
		} `json:"error"`
	}
	if !peekJSON(resp, &body) {
		return false
	}
	if resp.StatusCode == http.StatusBadRequest {
		return body.Error.Type == "invalid_request_error"
	}
	return body.Error.Code == "idempotency_key_in_use" || body.Error.Code == "lock_timeout"
}

// boolHint reads a "true"/"false" retry header, case-insensitively; any
// other value gives no hint.
func boolHint(v string) retrybudget.RetryHint {
	switch v = strings.TrimSpace(v); {
	case strings.EqualFold(v, "true"):
		return retrybudget.HintRetry
	case strings.EqualFold(v, "false"):
		return retrybudget.HintNoRetry
	default:
		return retrybudget.HintNone
	}
}
