// Package rateheader reads the rate-limit fields providers send with their
// responses, and turns a spent quota into a pause of the whole limiter
// boundary.
//
// Three families of fields are understood, each by its own parser:
//
//   - the IETF RateLimit and RateLimit-Policy fields
//     (draft-ietf-httpapi-ratelimit-headers), in the Structured Field
//     syntax of the current drafts (RateLimit: "default";r=50;t=30), in the
//     Dictionary syntax of draft -07 (RateLimit: limit=100, remaining=50,
//     reset=30) and as the separate RateLimit-Limit, RateLimit-Remaining
//     and RateLimit-Reset fields of drafts -00 to -06: [ParseIETF];
//   - the de facto X-RateLimit-Limit, X-RateLimit-Remaining and
//     X-RateLimit-Reset fields, whose reset is epoch seconds for some
//     providers and delta seconds or a duration for others: [XRateLimit];
//   - Retry-After-Ms, the millisecond Retry-After of OpenAI-style APIs
//     ([ParseRetryAfterMs]), and Retry-After with decimal seconds
//     ([ParseRetryAfter]).
//
// Every parser is pure: it takes the response header and the time the
// response arrived, and never panics. Malformed, negative, overflowing and
// absurd values are treated as absent, as the IETF draft requires of
// RateLimit fields (§7: "Malformed RateLimit header fields MUST be
// ignored"); a reset further away than [MaxReset] counts as absurd.
//
// [Classifier] wraps another retrybudget.Classifier: when a quota is spent
// (remaining 0) and resets in the future, it sets
// Classification.PauseUntil, which the Transport hands to its limiter's
// Cooldown so every worker sharing the boundary stops until the reset.
package rateheader
