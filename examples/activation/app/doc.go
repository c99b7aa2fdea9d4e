// Package app is the campaign-activation service of examples/activation,
// importable so that every variant of the example serves the same
// handlers: the command in examples/activation (a ledger in memory or in
// Redis) and the one in examples/activation/pg (PostgreSQL, a module of
// its own so that pgx stays out of the root go.mod).
//
// The service's front door is guarded by the idempotency middleware; its
// call to the destination, a fake ad platform that deduplicates by
// Idempotency-Key ([Destination]), goes through a retrybudget Transport
// under the same business action; both sides are recorded in one
// ledger.Store, and the activations themselves are kept in an
// [Activations] store shared by every instance, so any instance answers
// an activation's Location. For an operator's token only, GET
// /admin/tenants/{tenant}/actions/{key} shows the ledger's records of an
// action and GET /admin/stuck the oldest stuck ones; the destination's GET
// /v1/stats counts its effects.
package app
