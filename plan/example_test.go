package plan_test

import (
	"fmt"
	"time"

	"github.com/retrybudget/retrybudget/plan"
)

// A call under the default policy with a 5s deadline, every attempt
// failing after one second.
func ExampleCompute() {
	pl := plan.Compute(plan.Policy{MaxAttempts: 5, Deadline: 5 * time.Second})
	for _, a := range pl.Attempts {
		fmt.Printf("attempt %d: waits %v..%v, starts %v..%v, fits: %v\n",
			a.N, a.WaitMin, a.WaitMax, a.Earliest, a.Latest, a.Fit)
	}
	fmt.Printf("gives up by %v (%v)\n", pl.GiveUp, pl.Reason)
	fmt.Printf("outage: %.1f attempts per call with the budget, %d without\n", pl.Amplification, pl.Sendable)
	// Output:
	// attempt 1: waits 0s..0s, starts 0s..0s, fits: yes
	// attempt 2: waits 100ms..300ms, starts 1.1s..1.3s, fits: yes
	// attempt 3: waits 200ms..600ms, starts 2.3s..2.9s, fits: yes
	// attempt 4: waits 400ms..1.2s, starts 3.7s..5.1s, fits: maybe
	// attempt 5: waits 800ms..2.4s, starts 5.5s..8.5s, fits: never
	// gives up by 5s (retrybudget: retry cannot fit the deadline)
	// outage: 1.1 attempts per call with the budget, 4 without
}

// The budget's bound on attempts per call while a provider is down, for a
// process sending 20 first attempts per second: the floor of 10 retries per
// second is more than 10% of 20, so it sets the bound.
func ExampleAmplification() {
	p := plan.Policy{FirstAttemptsPerSec: 20}
	fmt.Println(plan.Amplification(p, 4))
	p.NoBudget = true
	fmt.Println(plan.Amplification(p, 4))
	// Output:
	// 1.5
	// 4
}
