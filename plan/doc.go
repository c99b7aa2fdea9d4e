// Package plan works out, without sending anything, what a retrybudget
// policy does to one call whose every attempt fails: when each attempt
// starts at the earliest and at the latest (the jitter range), which
// attempts cannot fit the deadline, when the call gives up at the latest,
// and how much the retry budget lets a fleet multiply its load on a
// provider that is down.
//
// Everything here is a pure function of a Policy: no clock, no randomness,
// no I/O. The rules are the Transport's own: its defaults and wait rule
// come from the one schedule both use (internal/schedule), its backoff is
// cenkalti/backoff/v4's ExponentialBackOff walked as ranges, and its
// budget is the budget.Local rule (budget.Config.Rule); the tests hold them
// to the real backoff, the real budget.Local and a real Transport.
//
// The command "retrybudget plan" prints a Plan as a table or draws it as an
// SVG timeline; see README.md in this directory.
package plan
