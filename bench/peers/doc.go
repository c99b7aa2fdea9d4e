// Package peers runs the same scenarios against this SDK,
// github.com/hashicorp/go-retryablehttp and failsafe-go's failsafehttp, in
// one run, on one loopback server per scenario:
//
//   - the success path: ns/op and allocs/op of one GET and one POST,
//     beside the bare http.Transport;
//   - attempts per logical request during a total outage;
//   - time to give up when Retry-After exceeds the deadline;
//   - effects per logical POST when the first response is lost;
//   - goodput and arrivals per call after a spike at a provider whose
//     queue still works for clients that left (TestMetastable, in
//     virtual time against an in-memory provider);
//   - hedging: the callers' p50 and p99 against a provider whose slowest
//     5 % take 20 times its median, and requests per call in a slow
//     outage, beside failsafe-go's hedge policy.
//
// It is a separate module so that the SDK's go.mod depends on neither peer.
// Run from this directory (TestScenarios takes about 90 s on two cores, 75 s
// of it the hedging scenarios):
//
//	go test -run '^$' -bench . -benchmem -count 3
//	go test -run TestScenarios -v
//	go test -run TestMetastable -v
//	PEERS_INSTRUCTIONS=1 go test -run 'TestInstructions$' -v   # under valgrind, ~2 min
//
// TestInstructions counts the success path in instructions per call
// (callgrind), which hold still on a loaded machine where nanoseconds do
// not; it skips, saying so, without valgrind.
//
// docs/benchmarks.md at the repository root holds the results and what
// each library was configured with.
package peers
