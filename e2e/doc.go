// Package e2e holds the end-to-end fault suite: many actions across worker
// OS processes through the full stack (action ledger, shared rate limiter and
// shared retry budget, all in Redis) against a fault-injecting provider on
// loopback, with a worker SIGKILLed and Redis restarted mid-run. It checks
// that every action is accounted for, that no effect is applied twice and
// that the provider's rate-limit refusals stay within the limiter's bound.
//
// The package has only tests. Short mode runs in CI:
//
//	go test -race ./e2e/
//
// The long mode (10,000 actions) is behind a variable:
//
//	RETRYBUDGET_LONG=1 go test -timeout 30m ./e2e/
package e2e
