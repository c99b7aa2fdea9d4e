// Package fakes holds local fakes of the providers behind the SDK
// integrations (Stripe, OpenAI, GitHub, Slack, Twilio, PayPal), built on
// the standard library alone, each an httptest.Server that behaves as its
// provider documents where it matters to retries: a provider that
// deduplicates by a key header (Stripe's Idempotency-Key, PayPal's
// PayPal-Request-Id) stores the first answer for a key and replays it,
// applying no second effect, and Stripe answers 409 while a request with
// the same key is in flight; the others apply every request. Each fake
// counts effects (a charge, a message, an issue) and records every
// arrival, so tests count at the provider, not responses. Faults (an
// outage, a 429 with Retry-After, an answer after the effect) are injected
// per request.
package fakes
