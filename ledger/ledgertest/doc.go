// Package ledgertest is the conformance suite of ledger.Store: the
// behaviour every store (Memory, Redis, PostgreSQL) must share, as one
// importable set of tests. A store's test supplies a Harness (the store,
// a way to move its clock, a way to wait out a retention) and calls Run.
//
// The package is meant for tests only; it imports "testing".
package ledgertest
