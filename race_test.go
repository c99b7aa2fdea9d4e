//go:build race

package retrybudget

// raceEnabled reports whether the tests run under the race detector, which
// changes what allocates.
const raceEnabled = true
