package plan

// Amplification returns the attempts per call that p's retry budget allows
// in the steady state of a total outage, when every attempt fails and is
// retryable, and sendable attempts fit the schedule:
//
//	min(sendable, 1 + max(Percent, MinRetriesPerSec / FirstAttemptsPerSec))
//
// With NoBudget it is sendable, since every retry is allowed.
//
// The maximum, not a sum, because the budget counts a retry allowed by the
// floor in its window like any other (budget.go, budget.lua): once the
// floor's retries alone pass Percent of first attempts, the percent rule
// admits none. So retries run at max(Percent × rate, MinRetriesPerSec) per
// second, never at their sum. Window plays no part in the steady state; it
// sets how much unspent allowance, up to Percent × rate × Window retries,
// can go out at once when an outage begins.
//
//snippet:text
func Amplification(p Policy, sendable int) float64 {
	p = p.WithDefaults()
	if p.NoBudget {
		return float64(sendable)
	}
	return min(float64(sendable), 1+max(p.Budget.Percent, p.Budget.MinRetriesPerSec/p.FirstAttemptsPerSec))
}
