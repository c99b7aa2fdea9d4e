// Package faultsim is the fault simulator behind every TestSimulation: it
// runs many whole calls through real Transports against a fake provider
// that counts effects, and a real ledger store (a World), under schedules
// drawn from seeds (see Schedule for the fault set), and checks the
// library's promises after each call and at the end of each schedule:
//
//   - at most one effect per action at the provider;
//   - no applied action reported (Outcome.MaybeApplied false on a failed
//     call) or recorded (failed, or absent) as not applied;
//   - no action that was never sent nor marked as sending reported or
//     recorded as uncertain;
//   - every RoundTrip returns by its deadline plus the world's slack (in
//     real time, plus the time the test process itself was not run while
//     the call ran, measured by a probe: see stallProbe);
//   - no action in progress past its lease and one sweep that Sweep does
//     not list;
//   - the limiter never grants more than the limit in any window, nor
//     during a cooldown the provider asked for; an unavailable limiter is
//     reported as ErrLimiter, not as a rate limit, and a failing Allow
//     returns within its Timeout and half of it (in real time, plus the
//     process's own stall); ErrRateLimited carries a RetryAt;
//   - every caller's request body is closed (the RoundTripper contract);
//   - a streamed answer's first bytes reach the caller within a second
//     (the Transport's read-ahead to store it), not when the stream ends;
//   - an Atomic handler's transaction is all or nothing: its effect
//     committed exactly when the action's record did;
//   - done, never applied: no call Next reads as StepDone, and no record
//     completed with a 2xx or a 303, for an action the provider never
//     applied (a 200 that says "not processed", such as GitHub's GraphQL
//     RATE_LIMITED, read as success);
//   - a marked effect is not run again: once an inbound handler's
//     MarkEffect returned and its server died, no later run of that
//     action reaches the handler.
//
// A failing schedule prints its seed, its schedule, the broken invariants
// and a trace; rerun it with -sim.seed=N (or RETRYBUDGET_SIM_SEED=N). A
// seed always draws the same schedule in the same world. A world in
// virtual time (World.Virtual, testing/synctest) runs a racer on the
// owner's goroutine, so a seed mostly reruns the same interleaving too;
// goroutines woken at the same virtual instant run in the scheduler's
// order, and code that walks a map (a full give-up memory) in Go's random
// order. A world in real time reruns the faults, not the timing.
//
// The Redis and PostgreSQL worlds batch (World.Batches): their stores share
// one round trip between the calls of concurrent actions, so their
// schedules draw a store latency, jobs that start at once, and the faults
// that strike a batch (batch.go): its reply lost to every call, its
// connection cut part-way, and a takeover of one of its calls' actions
// while the batch waits. Memory has no batches and draws none of these.
//
// The package uses only the public API of the module's packages. The
// worlds live beside the stores they need: Memory and Redis in the root
// package's tests, PostgreSQL in ledger/pgledger's (a module of its own,
// which may import this internal package: it lives under the same path).
// Importing the package registers the flags -sim.seed, -sim.from,
// -sim.schedules and -sim.trace in the test binary. A run's window of seeds
// starts at -sim.from (or RETRYBUDGET_SIM_FROM), by default at a seed drawn
// from the clock, so every CI run explores seeds no earlier run did; the
// window is logged, and a failing seed printed with its rerun command.
//
// The worker (worker.go) is a real worker: after every call it decides by
// retrybudget.Next, or for an SDK by the captured record's Next with the
// SDK's error, and nothing else: it runs the action again on StepRetry, not
// before RetryAt, ends on StepDone and StepStop, and leaves StepHold to the
// Monitor. Its processes restart under stable Owners (a pod's name) as new
// instances, and a racing delivery may run under the same Owner in a live
// process; the provider may take half a lease to apply a request, and
// applies it even when its client is gone.
package faultsim
