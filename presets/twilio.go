package presets

import (
	"net/http"
	"strings"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/limiter"
)

// TwilioKeyRetention is how long Twilio keeps an Idempotency-Key on the
// APIs that take one: "Keys are scoped to account + region with a 24-hour
// TTL" (Conversations v2 API reference, read 2026-12-03).
const TwilioKeyRetention = 24 * time.Hour

// Twilio returns the policy for the Twilio REST APIs (*.twilio.com:
// api.twilio.com and the product hosts such as verify.twilio.com) that
// take no idempotency key. TwilioRoutes adds the APIs that take one.
//
// Sources (read 2026-12-03): https://www.twilio.com/docs/api/errors/20429,
// https://www.twilio.com/docs/usage/rest-api-best-practices,
// https://www.twilio.com/docs/api/errors/60202 and
// https://www.twilio.com/docs/api/errors/60203.
//
//   - A 429 (error 20429, too many concurrent requests) is a capacity
//     answer with HintRetry: Twilio says "requests that receive 429
//     responses aren't processed and are safe to retry after backing
//     off", so it is repeated even for a POST that carries no key, such as
//     sending a message.
//   - A 429 whose JSON error code is 60202 ("Max check attempts reached")
//     or 60203 ("Max send attempts reached") is Verify's limit on one
//     verification: 5 attempts per 10 minutes. Waiting seconds does not
//     lift it, so it is a business answer, not retried.
//   - Key: the Programmable Messaging and Voice (2010-04-01) APIs, Verify
//     and most products document no idempotency key for requests (the
//     I-Twilio-Idempotency-Token is on the webhooks Twilio sends), so none
//     is sent (OmitKey) and none is honoured: a POST that got a 5xx or lost
//     its connection after being written is not repeated (ErrUncertain),
//     because the message or call may already exist. Reconcile by listing
//     resources. The APIs that take Idempotency-Key are in TwilioRoutes.
//   - Three attempts, 1s doubling up to 30s (our choice; Twilio asks for
//     exponential backoff and fewer concurrent requests).
//   - Boundary: the Account SID, since Twilio limits concurrency per
//     account: taken from the path (/2010-04-01/Accounts/{AccountSid}/...)
//     or else from the basic-auth user when it is an Account SID ("AC...").
//     A request authenticated with an API key ("SK...") to a product host
//     names no account, so it gets the host and a hash of its credentials;
//     when several API keys share one account, set
//     limiter.Fixed("twilio:" + accountSID) on the copy.
func Twilio() retrybudget.Route {
	return retrybudget.Route{
		Name: "twilio",
		Host: "*.twilio.com",
		Config: retrybudget.Config{
			OmitKey:     true,
			MaxAttempts: 3,
			BaseDelay:   time.Second,
			MaxDelay:    30 * time.Second,
			Boundary:    twilioAccount,
			Classifier:  twilioClassifier{},
		},
	}
}

// TwilioRoutes returns Twilio and, for the APIs that take Idempotency-Key,
// a Route each that sends the key and relies on it (KeysHonoured), with
// TwilioKeyRetention: a POST that may have been applied is repeated under
// its key. Give them all to the Transport (Config.Routes); a field changed
// on one (Limiter, Boundary) must be changed on each.
//
//   - conversations.twilio.com/v2/ControlPlane/ (Conversations v2
//     configurations), whose reference documents Idempotency-Key: "Submitting
//     the same key returns the original response without creating a
//     duplicate operation". Other Conversations v2 calls document no key
//     and stay with Twilio.
//   - voice.twilio.com/v3/Transcriptions: "Requests with the same key within
//     the idempotency window return the original response".
func TwilioRoutes() []retrybudget.Route {
	keyed := func(host, prefix string) retrybudget.Route {
		r := Twilio()
		r.Host, r.PathPrefix = host, prefix
		r.Config.KeyHeader, r.Config.KeysHonoured, r.Config.OmitKey = "Idempotency-Key", true, false
		r.Config.KeyRetention = TwilioKeyRetention
		return r
	}
	return []retrybudget.Route{
		Twilio(),
		keyed("conversations.twilio.com", "/v2/ControlPlane/"),
		keyed("voice.twilio.com", "/v3/Transcriptions"),
	}
}

// twilioAccount is the Twilio boundary: the Account SID from the path or
// the basic-auth user, or else the host and a hash of the credentials. An
// Account SID names an account and is no secret.
func twilioAccount(r *http.Request) string {
	if _, rest, ok := strings.Cut(r.URL.Path, "/Accounts/"); ok {
		sid, _, _ := strings.Cut(rest, "/")
		if sid = strings.TrimSuffix(sid, ".json"); strings.HasPrefix(sid, "AC") {
			return "twilio:" + sid
		}
	}
	if user, _, ok := r.BasicAuth(); ok && strings.HasPrefix(user, "AC") {
		return "twilio:" + user
	}
	return limiter.ByCredential()(r)
}

// twilioClassifier marks Twilio's 429 as safe to retry, except Verify's
// per-verification limits.
type twilioClassifier struct{}

// Classify implements retrybudget.Classifier.
func (twilioClassifier) Classify(a *retrybudget.AttemptResult) retrybudget.Classification {
	cls := retrybudget.DefaultClassifier{}.Classify(a)
	if a.Response == nil || a.Response.StatusCode != http.StatusTooManyRequests {
		return cls
	}
	var body struct {
		Code int `json:"code"`
	}
	if peekJSON(a.Response, &body) && (body.Code == 60202 || body.Code == 60203) {
		cls.Class, cls.Hint, cls.RetryAt = retrybudget.ClassBusiness, retrybudget.HintNone, time.Time{}
		return cls
	}
	cls.Class, cls.Hint = retrybudget.ClassCapacity, retrybudget.HintRetry
	return cls
}
