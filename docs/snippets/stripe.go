//go:build snippet

package main

import (
	"time"

	"github.com/stripe/stripe-go/v85"
)

// What the SDK fragments use without declaring (<!-- snippet: needs
// stripe -->): the API key, a charge's parameters, the order it is for,
// and the program's own way to run a job again later.
var (
	key     string
	params  *stripe.ChargeCreateParams
	orderID string
	requeue func(orderID string, at time.Time)
)
