//go:build snippet

package main

import (
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stripe/stripe-go/v85"

	"github.com/retrybudget/retrybudget/otelretry"
)

// What the godoc fragments of the SDK integrations and the Transport use
// without declaring (//snippet:needs sdk): the Transport, the credentials
// of each SDK, a built stripe-go client and telemetry, and the program's
// own handler and way to run a job again at a time.
var (
	tr        http.RoundTripper // a retrybudget Transport
	token     string            // an API token (GitHub, Slack, Twilio's auth token)
	sid       string            // a Twilio account SID
	clientID  string            // a PayPal client id
	secret    string            // a PayPal secret
	sc        *stripe.Client
	tel       *otelretry.Telemetry
	rdb       *redis.Client
	activate  http.Handler // a handler with an effect
	requeueAt func(at time.Time)
)
