package presets

import (
	"net/http"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/limiter"
)

// Twilio returns the policy for the Twilio REST APIs (*.twilio.com:
// api.twilio.com and the product hosts such as verify.twilio.com).
//
// Sources: https://www.twilio.com/docs/api/errors/20429 and
// https://www.twilio.com/docs/usage/rest-api-best-practices.
//
//   - A 429 (error 20429, too many concurrent requests) is a capacity
//     answer with HintRetry: Twilio says "requests that receive 429
//     responses aren't processed and are safe to retry after backing
//     off", so it is repeated even for a POST that carries no key, such as
//     sending a message.
//   - Key: Twilio's REST API documents no idempotency key for requests
//     (its I-Twilio-Idempotency-Token is on the webhooks it sends), so
//     none is sent (OmitKey) and none is honoured: a POST that got a 5xx or lost its connection after
//     being written is not repeated (ErrUncertain), because the message
//     or call may already exist. Reconcile by listing resources.
//   - Three attempts, 1s doubling up to 30s (our choice; Twilio asks for
//     exponential backoff and fewer concurrent requests).
//   - Boundary: the host and a hash of the Authorization header (the
//     account or API key credentials); concurrency is limited per account.
func Twilio() retrybudget.Route {
	return retrybudget.Route{
		Name: "twilio",
		Host: "*.twilio.com",
		Config: retrybudget.Config{
			OmitKey:     true,
			MaxAttempts: 3,
			BaseDelay:   time.Second,
			MaxDelay:    30 * time.Second,
			Boundary:    limiter.ByCredential(),
			Classifier:  twilioClassifier{},
		},
	}
}

// twilioClassifier marks Twilio's 429 as safe to retry.
type twilioClassifier struct{}

// Classify implements retrybudget.Classifier.
func (twilioClassifier) Classify(a *retrybudget.AttemptResult) retrybudget.Classification {
	cls := retrybudget.DefaultClassifier{}.Classify(a)
	if a.Response != nil && a.Response.StatusCode == http.StatusTooManyRequests {
		cls.Class, cls.Hint = retrybudget.ClassCapacity, retrybudget.HintRetry
	}
	return cls
}
