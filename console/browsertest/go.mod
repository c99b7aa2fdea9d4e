module github.com/retrybudget/retrybudget/console/browsertest

go 1.26.0

replace github.com/retrybudget/retrybudget => ../../

require (
	github.com/chromedp/chromedp v0.23.1
	github.com/retrybudget/retrybudget v0.0.0-00010101000000-000000000000
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/chromedp/cdproto v0.160.1 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/redis/go-redis/v9 v9.23.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
