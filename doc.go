// Package retrybudget is an http.RoundTripper for calling third-party APIs
// (payments, messaging, SaaS) without duplicate effects and without melting
// the provider.
//
// Put a Transport in an http.Client and every outbound request gets:
//
//   - a stable idempotency key: derived from the business Action named with
//     WithAction (the same on every retry and after a crash, distinct across
//     tenants), the caller's own header, or one generated key per call;
//   - a Class for every failure: transport (not sent, maybe sent), capacity,
//     server, business; business errors are never retried;
//   - waiting by capped, jittered exponential backoff that never undercuts
//     the provider's Retry-After (read as rateheader.ParseRetryAfter reads
//     it) and never sleeps past the deadline: when a wait cannot fit, the call ends at once with a RetryAt
//     time saying when to come back;
//   - a retry Budget that keeps retries a bounded fraction of traffic, and
//     optional adaptive throttling;
//   - an optional rate limiter shared through Redis (package limiter) and an
//     optional action ledger (package ledger) that replays, holds or rejects
//     a repeated action instead of executing it twice.
//
// The Transport never modifies the caller's request, returns every HTTP
// response as (resp, nil) with its body unread, and reports what happened as
// an Outcome: through errors.As on an *Error when there is no response, or
// OutcomeOf on a response.
//
// The standards it follows are RFC 9110 (Retry-After §10.2.3, idempotent
// methods §9.2.2, HTTP-date §5.6.7), RFC 6585 (429) and RFC 9457 (problem
// details). The Idempotency-Key header follows the expired IETF draft
// draft-ietf-httpapi-idempotency-key-header as input; it is not a standard.
package retrybudget
