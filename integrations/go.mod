module github.com/retrybudget/retrybudget/integrations

go 1.26.0

replace github.com/retrybudget/retrybudget => ../

require (
	github.com/google/go-github/v84 v84.0.0
	github.com/openai/openai-go/v3 v3.102.0
	github.com/plutov/paypal/v4 v4.8.0
	github.com/redis/go-redis/v9 v9.23.0
	github.com/retrybudget/retrybudget v0.0.0-00010101000000-000000000000
	github.com/sashabaranov/go-openai v1.43.0
	github.com/slack-go/slack v0.36.0
	github.com/stripe/stripe-go/v85 v85.0.0
	github.com/twilio/twilio-go v1.31.0
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/coder/websocket v1.8.15 // indirect
	github.com/dunglas/httpsfv v1.1.2 // indirect
	github.com/golang-jwt/jwt/v5 v5.3.1 // indirect
	github.com/golang/mock v1.6.0 // indirect
	github.com/google/go-querystring v1.2.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/tidwall/gjson v1.20.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.1 // indirect
	github.com/tidwall/sjson v1.2.5 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/time v0.16.0 // indirect
)
