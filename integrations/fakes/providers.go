package fakes

import (
	"fmt"
	"net/http"
	"strings"
)

// Stripe starts a fake of the Stripe API: POST /v1/charges and
// /v1/payment_intents apply an effect. Idempotency-Key is honoured per API
// key: the first answer is stored and replayed (with Idempotent-Replayed:
// true), and a request whose key is in flight gets 409 idempotency_error
// (https://docs.stripe.com/api/idempotent_requests).
func Stripe() *Provider {
	return newProvider(spec{
		keyHeader:   "Idempotency-Key",
		inFlight409: true,
		effect: func(r *http.Request) bool {
			return r.Method == http.MethodPost && (r.URL.Path == "/v1/charges" || r.URL.Path == "/v1/payment_intents")
		},
		answer: func(r *http.Request, n int) (int, string) {
			if strings.HasPrefix(r.URL.Path, "/v1/payment_intents") {
				return 200, fmt.Sprintf(`{"id":"pi_%d","object":"payment_intent","amount":100,"currency":"usd","status":"requires_payment_method"}`, n)
			}
			return 200, fmt.Sprintf(`{"id":"ch_%d","object":"charge","amount":100,"currency":"usd","status":"succeeded"}`, n)
		},
		errorBody: func(status int) string {
			typ := "api_error"
			switch {
			case status == http.StatusConflict:
				typ = "idempotency_error"
			case status == http.StatusTooManyRequests:
				typ = "invalid_request_error"
			}
			return fmt.Sprintf(`{"error":{"type":%s,"message":%s}}`, jsonString(typ), jsonString(http.StatusText(status)))
		},
	})
}

// OpenAI starts a fake of the OpenAI API (also what go-openai calls): POST
// /v1/chat/completions applies an effect (a billed completion). The API
// honours no idempotency key.
func OpenAI() *Provider {
	return newProvider(spec{
		effect: func(r *http.Request) bool {
			return r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions"
		},
		answer: func(r *http.Request, n int) (int, string) {
			return 200, fmt.Sprintf(`{"id":"chatcmpl-%d","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, n)
		},
		errorBody: func(status int) string {
			return fmt.Sprintf(`{"error":{"message":%s,"type":"server_error","param":null,"code":null}}`, jsonString(http.StatusText(status)))
		},
	})
}

// GitHub starts a fake of the GitHub REST API: POST
// /repos/{owner}/{repo}/issues applies an effect. GitHub honours no
// idempotency key.
func GitHub() *Provider {
	return newProvider(spec{
		effect: func(r *http.Request) bool {
			return r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/repos/") && strings.HasSuffix(r.URL.Path, "/issues")
		},
		answer: func(r *http.Request, n int) (int, string) {
			if r.Method == http.MethodPost {
				return 201, fmt.Sprintf(`{"id":%d,"number":%d,"title":"t","state":"open"}`, n, n)
			}
			return 200, `{}`
		},
		errorBody: func(status int) string {
			return fmt.Sprintf(`{"message":%s,"documentation_url":"https://docs.github.com/rest"}`, jsonString(http.StatusText(status)))
		},
	})
}

// Slack starts a fake of the Slack Web API: POST /api/chat.postMessage
// applies an effect. The token is read from the Authorization header or
// the form body. Slack honours no idempotency key.
func Slack() *Provider {
	return newProvider(spec{
		effect: func(r *http.Request) bool {
			return r.Method == http.MethodPost && r.URL.Path == "/api/chat.postMessage"
		},
		answer: func(r *http.Request, n int) (int, string) {
			return 200, fmt.Sprintf(`{"ok":true,"channel":"C1","ts":"%d.000100"}`, n)
		},
		errorBody: func(status int) string {
			return `{"ok":false,"error":"ratelimited"}`
		},
	})
}

// Twilio starts a fake of the Twilio REST API: POST
// /2010-04-01/Accounts/{sid}/Messages.json applies an effect (a message
// sent). Twilio honours no idempotency key for requests.
func Twilio() *Provider {
	return newProvider(spec{
		effect: func(r *http.Request) bool {
			return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/Messages.json")
		},
		answer: func(r *http.Request, n int) (int, string) {
			return 201, fmt.Sprintf(`{"sid":"SM%032d","status":"queued","body":"hi"}`, n)
		},
		errorBody: func(status int) string {
			return fmt.Sprintf(`{"code":20500,"message":%s,"more_info":"https://www.twilio.com/docs/errors/20500","status":%d}`, jsonString(http.StatusText(status)), status)
		},
	})
}

// PayPal starts a fake of the PayPal REST API: POST /v1/oauth2/token
// issues an access token (no effect) and POST /v2/checkout/orders applies
// an effect. PayPal-Request-Id is honoured: a repeated id gets the first
// answer (https://developer.paypal.com/api/rest/reference/idempotency/).
func PayPal() *Provider {
	return newProvider(spec{
		keyHeader: "PayPal-Request-Id",
		effect: func(r *http.Request) bool {
			return r.Method == http.MethodPost && r.URL.Path == "/v2/checkout/orders"
		},
		answer: func(r *http.Request, n int) (int, string) {
			if r.URL.Path == "/v1/oauth2/token" {
				return 200, `{"scope":"s","access_token":"A21AA","token_type":"Bearer","app_id":"APP","expires_in":32400,"nonce":"n"}`
			}
			return 201, fmt.Sprintf(`{"id":"ORDER-%d","status":"CREATED"}`, n)
		},
		errorBody: func(status int) string {
			return fmt.Sprintf(`{"name":"INTERNAL_SERVICE_ERROR","message":%s,"debug_id":"d"}`, jsonString(http.StatusText(status)))
		},
	})
}
