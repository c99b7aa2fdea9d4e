// Package limiter keeps calls to a payment or SaaS provider under the
// provider's rate limit, across every worker that shares a credential, so
// the provider is not melted and does not answer 429.
//
// # Deciding
//
// A [Limiter] decides one request at a time: [Limiter.Allow] takes a token
// from every limit that applies, or from none, and returns a [Decision].
// Being limited is data, not an error: Decision.RetryAfter says how long to
// wait before asking again, and Decision.Reason says what refused. The
// retrybudget Transport calls Allow before every attempt, waits RetryAfter
// only when that fits the caller's deadline, and otherwise gives up with a
// capacity error; delayed work is surfaced to its owner, never queued
// without bound.
//
// Two implementations are provided:
//
//   - [Local], on golang.org/x/time/rate, for one process: no
//     coordination, state per boundary, idle state dropped.
//   - [Redis], for a fleet: any redis.UniversalClient (standalone, sentinel
//     or cluster), one Lua script per round trip, Redis TIME as the
//     fleet's one clock, and concurrent decisions of one boundary
//     coalesced into one round trip.
//
// # Boundaries
//
// A boundary is what the provider meters: usually its host plus the
// account or API key. A [Boundary] function maps a request to its key:
// [ByCredential] (host and a SHA-256 hash of the Authorization header),
// [ByHeader] (host and a hash of an API-key header) or [Fixed] (a named
// account). Raw credentials never reach Redis or the logs; [Redis] hashes
// the boundary once more before using it in a key, with HMAC-SHA256 under
// RedisConfig.BoundaryKey, a per-deployment secret the same on every
// process of the fleet. The key is required ([NewRedis] fails with
// [ErrNoBoundaryKey] without one): an unkeyed hash in a store the fleet
// shares would let whoever can list its keys test guessed credentials
// offline. Owners are named in Redis by the same keyed hash. [Local] keeps
// its state in the process and needs no key.
//
// # Limits
//
// A [Limit] is GCRA, a token bucket seen as a schedule: Rate requests per
// Period, with up to Burst at once from an idle boundary. In any window of
// one Period a Limit allows at most Rate+Burst-1 requests, so Burst 1, the
// zero value, never exceeds Rate in a window; [Window] builds a limit that
// never exceeds n per window while allowing bursts. Several limits per
// boundary (100/s and 10,000/h) are checked together: a request is allowed
// only if all allow, and nothing is taken if any refuses.
//
// A limiter cannot see when a request reaches the provider, only when it
// was allowed, so network delay can bunch requests up on arrival. Against a
// provider that meters with a token bucket of the same Rate and Burst this
// matters only when an idle boundary becomes busy, and then costs about one
// request; a Burst one or two below the provider's removes even that.
//
// # Cooldown
//
// When the provider answers 429 or 503 with Retry-After, the Transport
// calls [Limiter.Cooldown]: the whole boundary pauses until then, for every
// worker that shares it. [Redis] stores the pause in Redis, as a length
// added to Redis TIME (not the caller's clock), and checks it in the same
// script as the rate decision, so the fleet stops at once. Pauses only
// grow, and are capped by MaxCooldown.
//
// # Scopes
//
// A boundary may be within a scope: [Within](scope, name) is the boundary
// scope + "|" + name, with limits of its own, and a cooldown of scope
// pauses it and every other boundary within scope, while a cooldown of
// the boundary pauses it alone. This is for a provider that keeps a limit
// per resource under one credential and another limit across all of them
// (GitHub: a primary limit per resource, a secondary limit per
// credential). A decision checks the boundary's cooldown and its scope's
// together: [Local] under one lock, [Redis] in the same script run, with
// no extra round trip. [Scope] returns the scope of a boundary (the
// boundary itself when it is within none); the Transport pauses it for a
// classification's PauseScopeUntil. Any boundary holding '|' is within
// the scope before its first '|'; hosts and credential hashes never hold
// one.
//
// # Coalescing
//
// By default [Redis] coalesces: while a decision for a boundary is in
// flight, further Allow calls of this process for it wait, and the next
// round trip decides all of them in one script run, GCRA for n tokens at
// once, each with its own Decision and RetryAfter (its place behind the
// requests refused before it). It is exact, unlike prefetching: tokens are
// taken when granted, so no window sees more than the limit grants. A lone
// caller pays one round trip as before, in its own goroutine; while
// callers keep arriving, one goroutine per boundary runs the round trips
// back to back, yielding after each until the callers it just answered
// ask again, so that they join the next (a group commit, with no timer):
// n concurrent callers pay one or two round trips for all of them.
// RedisConfig.MaxBatch bounds a batch (256); 1 turns coalescing off.
//
// # Fairness
//
// With a [FairQueue] (RedisConfig.Queue), a saturated boundary is shared
// round-robin by owner (Request.Owner, usually a tenant) across the fleet:
// a request that finds no token reserves a slot and Allow sleeps until it,
// each owner holding at most its weight of slots, so an owner with 64
// waiting requests gets no more than one with 2. It is work-conserving: an
// owner alone gets the whole limit. A request whose slot would come after
// its deadline takes nothing and is refused at once, with its place as
// RetryAfter; Decision.QueueDepth reports the owner's requests in the queue.
//
// With OwnerShare set, each owner is additionally held to that fraction of
// every limit, in the same atomic check: a hard ceiling per tenant, which a
// lone tenant cannot exceed either. Use the queue for fairness and
// OwnerShare only for a ceiling a tenant must never pass.
//
// # Prefetching
//
// For hot boundaries [Redis] can take up to RedisConfig.Prefetch tokens per
// round trip and spend the spare ones locally for up to PrefetchTTL. The
// fleet still never spends more tokens than the limit grants, but may
// spend them up to PrefetchTTL late, so any window of length W may see what
// the limit grants in W+PrefetchTTL. Unused tokens expire and are lost.
//
// # When Redis is in trouble
//
// Every round trip is bounded by RedisConfig.Timeout (50ms by default),
// even with a client that ignores context deadlines. When Redis fails, the
// limiter follows its [FailMode]: [FailOpen] decides from a process-local
// fallback holding FallbackShare of every limit, [FailClosed] returns an
// [*UnavailableError] matching [ErrUnavailable]. It logs the outage once
// (through an optional *slog.Logger; nil is silent), probes Redis once per
// ProbeInterval, and goes back to Redis by itself when it answers. Two
// costs of an outage are worth knowing: tokens spent from the fallback are
// not recorded in Redis, and a Redis that lost its data (a restart without
// persistence, a failover to a lagging replica) starts every boundary with
// full buckets, so the fleet may send up to one extra burst per limit.
//
// # Keys
//
// For a boundary b, [Redis] uses these keys under its Prefix, all with the
// hash tag of b so that a cluster keeps them on one slot (for b within a
// scope s, the hash tag of s, followed by the hash of b, so that a
// decision reads s's cooldown key, "<prefix>{<hash of s>}:cd", in the same
// script run):
//
//	<prefix>{<hash of b>}:cd                           the cooldown: end of the pause, in µs of Redis TIME
//	<prefix>{<hash of b>}:r:<interval>:<burst>         one limit's TAT (GCRA), one key per limit
//	<prefix>{<hash of b>}:o:<owner hash>:<interval>:<burst>  one owner's share of a limit, when OwnerShare is set
//	<prefix>{<hash of b>}:qh                           the fair queue: a hash of owner hash -> reserved slots, with a FairQueue
//	<prefix>{<hash of b>}:qz                           the fair queue: a sorted set of owner hash by its latest slot
//
// Every key expires once it no longer holds anything a fresh key would not.
package limiter
