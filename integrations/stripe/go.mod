module github.com/retrybudget/retrybudget/integrations/stripe

go 1.26.0

replace github.com/retrybudget/retrybudget => ../../

replace github.com/retrybudget/retrybudget/integrations => ../

require (
	github.com/retrybudget/retrybudget v0.0.0-00010101000000-000000000000
	github.com/retrybudget/retrybudget/integrations v0.0.0-00010101000000-000000000000
	github.com/stripe/stripe-go/v85 v85.0.0
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dunglas/httpsfv v1.1.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/redis/go-redis/v9 v9.23.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/time v0.16.0 // indirect
)
