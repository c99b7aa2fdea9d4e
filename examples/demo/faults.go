package main

import (
	"hash/fnv"
	"math/rand/v2"
)

// fault is what the provider does wrong with one request.
type fault int

const (
	faultNone        fault = iota
	faultBusy              // 429 with Retry-After in delta-seconds
	faultBusyUntil         // 429 with Retry-After as an HTTP-date
	faultUnavailable       // 503 without Retry-After
	faultLost              // apply the charge, then drop the connection unanswered
	faultGoAway            // 429 asking for an hour, longer than the client's MaxWait
)

// faultPlan decides faults from a seed, an idempotency key and the number
// of requests the provider already saw with that key. Deciding per key
// rather than from one shared random stream keeps a run reproducible
// whatever order concurrent requests arrive in.
type faultPlan struct {
	seed uint64
}

// pick returns the fault for the n-th request (from 0) carrying key.
func (p faultPlan) pick(key string, n int) fault {
	h := fnv.New64a()
	h.Write([]byte(key))
	x := rand.New(rand.NewPCG(p.seed, h.Sum64()^uint64(n))).IntN(100)
	// Percentages of requests that meet each fault; the rest (about 70%)
	// are served normally.
	odds := [...]struct {
		f       fault
		percent int
	}{
		{faultBusy, 7},
		{faultBusyUntil, 4},
		{faultUnavailable, 7},
		{faultLost, 8},
		{faultGoAway, 3},
	}
	for _, o := range odds {
		if x < o.percent {
			return o.f
		}
		x -= o.percent
	}
	return faultNone
}
