package rateheader_test

import (
	"context"
	"time"

	"github.com/retrybudget/retrybudget/limiter"
)

// noLimit is a limiter.Limiter that allows everything and forgets pauses,
// standing in for limiter.Local or limiter.Redis in the examples.
type noLimit struct{}

func (noLimit) Allow(context.Context, limiter.Request) (limiter.Decision, error) {
	return limiter.Decision{Allowed: true}, nil
}

func (noLimit) Cooldown(context.Context, string, time.Time) error { return nil }
