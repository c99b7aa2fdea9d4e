// Package console is the operator console: an http.Handler, rendered on
// the server from embedded templates with no JavaScript, that lists the
// actions a ledger.Store holds (uncertain, or in progress past their
// lease) and lets an operator settle one as applied or not applied, by the
// same path as "retrybudget ledger resolve" (ledgercli.Resolve). Settling
// as not applied inside the action's settle time, when a request already
// sent may still reach the provider, is asked again and done only on an
// explicit confirmation.
//
// Given a Metrics (Config.Metrics) whose Observer the service installs on
// its Transports, it also shows each destination's traffic: arrivals,
// provider 429s and pauses, limiter waits and refusals per tenant, the
// retry budget, overload refusals, replays and conflicts, as inline SVG
// charts drawn on the server.
//
// It is safe by default: New refuses a Config without an operator token
// or an authentication function; every form carries a CSRF token checked
// in constant time; a page never renders an action's idempotency key,
// fingerprint, request or response body, or any secret; actions are named
// in URLs by an opaque reference (an HMAC of Key.ID under a secret drawn
// per Handler) so that URLs, which end up in access logs and browser
// history, carry nothing that can be tested against guesses; every page
// reads at most Config.MaxScan records; and a tenant-scoped operator sees
// only its tenants' actions and traffic.
//
// The commands "retrybudget console" (Redis) and "retrybudget-pg console"
// (PostgreSQL) serve it on a store (package console/consolecmd). See
// docs/console.md.
package console
