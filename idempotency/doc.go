// Package idempotency is net/http middleware that gives a service's own
// front door the contract the retrybudget Transport gives its outbound
// calls: a request repeated under the same Idempotency-Key is replayed, held
// or rejected, never run twice. It keeps its records in a ledger.Store, so
// one Redis can hold both the inbound actions and the outbound calls they
// make, and one action identity runs from the client's request to the
// provider's.
//
// # Placement
//
// Wrap each route, behind authentication:
//
//	guard := idempotency.New(idempotency.Config{Store: store, Tenant: accountOf})
//	mux.Handle("POST /api/v1/campaign-activations", guard(activate))
//	http.ListenAndServe(addr, authenticate(mux))
//
// Per route, because the default operation is the pattern http.ServeMux
// matched (r.Pattern), which is set only for the handler it calls; behind
// authentication, because the tenant must be the authenticated account
// (Config.Tenant, which is required). An idempotency key is not a secret:
// clients derive keys from public parts of their action, and keys travel
// in logs and proxies. The tenant is what keeps one caller from being
// replayed another's response, so a guarded request without one is
// refused (TypeNoTenant).
//
// # The replay matrix
//
// A request whose method is not guarded (Config.Methods: POST and PATCH by
// default) passes through untouched. A guarded one is named by a
// ledger.Key: the tenant, the operation and the key; and fingerprinted by
// ledger.Fingerprint over its method, path, query, body and
// Config.FingerprintHeaders. Then, every problem as an RFC 9457
// application/problem+json body whose type is one of the Type constants:
//
//	request                                   answer                                  handler runs
//	no tenant (Config.Tenant nil / "")        500 / 403 TypeNoTenant                  no
//	no key header (Config.KeyOptional false)  400 TypeMissingKey                      no
//	key ParseKey rejects                      400 TypeMalformedKey                    no
//	body over Config.MaxRequestBody           413 TypeBodyTooLarge                    no
//	body that cannot be read                  400 TypeBodyUnreadable                  no
//	store unreachable                         503 TypeLedgerUnavailable, Retry-After  no
//	store full / tenant at its quota          503 / 429 TypeLedgerFull, Retry-After   no
//	Atomic: every transaction slot taken      503 TypeBusy, Retry-After: 1            no
//	new key, or record expired                the handler's response                  yes
//	same key, still running                   409 TypePending, Retry-After            no
//	same key, different fingerprint           422 TypeConflict                        no
//	same key, completed                       the stored response, replayed           no
//	same key, failed (no effect)              the handler's response                  yes, again
//	same key, uncertain                       409 TypeUncertain                       no
//	same key, uncertain, RerunUncertain       the handler's response                  yes, again
//
// A replay carries the stored status, the stored headers (the store's
// ledger.Config.Headers: Content-Type, Location, ETag and a few more by
// default; never Set-Cookie) and the stored body, plus HeaderReplayed
// ("Idempotent-Replayed: true"). Retry-After on 409 is what is left of how
// long the operation usually takes for the tenant, in whole seconds, at
// least one and never past the running request's lease (see
// Config.PendingRetryAfter).
//
// # The handler's contract
//
// The middleware runs the handler as the action's owner, with the action in
// its context (InboundFrom, and retrybudget.ActionFrom), and records how it
// ended from its status:
//
//   - 408, 425, 429 or any 5xx: failed. The handler promises that such an
//     answer means nothing happened, so the same key runs the handler again
//     next time. A handler that may fail after it changed something calls
//     MarkEffect first, and does not change anything when it reports an
//     error; its failure is then recorded as uncertain and the key is not
//     run again (unless Config.RerunUncertain).
//   - a panic, including http.ErrAbortHandler: recorded the same way as a
//     5xx, then re-raised, so net/http aborts the response as it always
//     does; but uncertain, as after MarkEffect, when the client was
//     already sent any other status (the handler flushed, or its body
//     outgrew Config.MaxResponseBody), since the handler then answered
//     as one that acted. (In Atomic mode the transaction is rolled back,
//     so only a marked effect makes it uncertain.)
//   - any other status, 4xx included: completed, and replayed to every later
//     request with the key. A 4xx is the action's answer: a validation
//     error stays one.
//
// A server that dies while the handler runs leaves the action in progress;
// once its lease (Config.Lease, renewed while the handler runs) has ended
// the action is uncertain: it may have had its effect.
//
// # What is stored, and when
//
// The response is held back, up to Config.MaxResponseBody, and stored with
// ledger Complete under the request's fencing token before the client sees
// it; a client that got the response and sends the key again thus always
// finds it completed. A response that outgrows the limit, or that the
// handler flushes (http.Flusher, http.ResponseController), is streamed from
// then on. Its body is stored when it ends up within the limit; otherwise
// only its SHA-256 and length are, and the record is written when the
// handler returns, after the client had most of the response: a request
// racing that end may get 409 TypePending. A replay of a body stored as a
// hash is never a truncated body: it is the stored status and headers with
// an empty body, HeaderBodyOmitted and an RFC 9530 Repr-Digest of the
// original body (see HeaderBodyOmitted). If the store cannot record the
// outcome, the handler's response is still delivered (it is the truth about
// an effect that happened) and Config.Logger is told; the record stays in
// progress until its lease ends, then uncertain. A guarded handler cannot
// hijack the connection (http.ResponseController.Hijack reports
// http.ErrNotSupported): a response that leaves HTTP cannot be stored.
//
// # Expiry
//
// A record lives for Config.Retention (the store's, 24 hours by default).
// After that the key names a new action: the handler runs, nothing is
// replayed, and a different request under the same key is not a conflict,
// as payment providers expire their keys.
//
// # Outbound calls
//
// A handler's calls to providers should carry the same business action so
// they are deduplicated too. Passing the inbound action itself to a
// retrybudget.Transport that shares the store would collide with the
// inbound record (same ledger.Key, held by the running request: the
// Transport would refuse the call as a conflict). WithStep derives one action per
// outbound step instead (Outbound): same tenant, operation
// "<inbound operation> -> <step>", and the key followed by the generation
// of the inbound record (its creation time). Its provider key is a pure
// function of the inbound action, its record and the step, so a handler
// run again after a failure gets the provider's stored response from the
// Transport's record rather than calling the provider a second time; and
// once the inbound record expired, a request under the same key is a new
// action whose steps get new records and provider keys, whatever the
// retention of the old step records.
//
// A step still held by another server when the handler returns a failure
// (typically a server that died mid-request, whose outbound lease outlives
// its inbound one) was not called by this run: the middleware drops the
// handler's answer, keeps the action held until that step's lease ends,
// and answers 409 TypePending with Retry-After. Recovery from a crash thus
// takes the longer of the inbound and outbound leases (see Config.Lease).
//
// # Exactly once with a transactional store
//
// With any store, a server that dies after the handler's effect and before
// the record is completed leaves the action uncertain: the middleware
// cannot know whether the effect happened, so it will not run the handler
// again (unless RerunUncertain). When the effect is a write to the same
// PostgreSQL database as the ledger, Config.Atomic closes that gap: the
// middleware opens a transaction of the store (ledger.Atomic) before the
// handler runs, the handler takes it from its context (pgledger.Tx) and
// does every effect through it, and the middleware completes the record in
// that same transaction. A crash, a cut connection or a failed handler
// then rolls the effect back with the record, and the action simply runs
// again; a commit whose answer was lost is answered 503, and the retry
// finds the stored response. Keep atomic responses under MaxResponseBody:
// a streamed response leaves before the commit. A handler whose statement
// failed in the transaction (a unique violation, say) has aborted it:
// nothing of it commits. If it then answers a 4xx, that refusal is the
// action's answer and is stored outside the transaction (ErrTxAborted); a
// 2xx or 3xx claims writes that were rolled back, so it is answered 503
// and the action runs again.
//
// An effect an Atomic handler does outside the transaction (a charge at a
// provider) is not rolled back with it. The handler calls MarkEffect
// before it, which writes the mark to the store outside the transaction
// and before it returns: a server that dies after the mark leaves the
// action uncertain, not failed, and it is not run again. When MarkEffect
// reports an error the mark is not written, and the handler must not do
// the effect.
//
// # Standards
//
// The key header follows draft-ietf-httpapi-idempotency-key-header (an
// expired draft, not a standard): a Structured Field String (RFC 9651
// §3.3.3), 400 for a missing or malformed key, 409 for a concurrent
// request and 422 for a reused key. Problems are RFC 9457; Retry-After is
// RFC 9110 §10.2.3; Repr-Digest is RFC 9530 §3.
//
//snippet:needs app, sdk
package idempotency
