// Package ledger is the durable action ledger: it gives every business
// action (a charge, a refund, a message) one identity and one outcome, so
// that a repeated action is replayed, held or rejected, and never executed
// twice. A retry inside one call is the easy half; the ledger covers the
// hard half: a worker that dies after the provider accepted a write but
// before anyone recorded it, and a job queue that runs the same action
// twice.
//
// # Identity and fingerprint
//
// An action is named by a Key (tenant, operation, idempotency key). Its
// record also keeps the Fingerprint of the request that created it, so the
// same key reused for a different request is a conflict rather than a
// replay. Fingerprint documents exactly which parts of a request count.
// The store keeps it sealed: an HMAC under the deployment's
// FingerprintKeys, which Redis (and any store shared between processes)
// requires, so that whoever reads the store cannot test guesses of the
// request body against it.
//
// # The decision
//
// Resolve is the whole decision matrix as one pure function: given the
// stored state and the request, it returns a Verdict (created, replayed,
// pending, conflict, delayed, uncertain, retry, resend, reconcile) and the
// decision path in words. Stores apply it atomically; the retrybudget
// Transport and the command "retrybudget resolve" show the same answer.
//
// # Stores
//
// A Store keeps records. Memory is the in-process default; Redis shares one
// ledger across a fleet, with one Lua script per state change, hash-tagged
// keys and the server's TIME. Both pass one conformance suite.
//
// An owner calls Reserve; if the Verdict owns the action it gets a lease
// and a fencing token, sends, records each send with AddAttempt, renews the
// lease during long calls (KeepLease does it in the background), and ends
// with Complete or Fail. An owner that reserves with
// ReserveRequest.MarksSending calls MarkSending before every send, so a
// grant whose lease ran out unmarked is known never to have been sent, an
// owner that lost its action sends nothing more, and each send starts its
// settle time (Record.SettleUntil), inside which a reconciler's "not
// found" is not trusted (Decision.Settling); a
// Reserve sent again after a lost reply finds its own grant by its Nonce.
// Only the current token can change the record: after an owner's lease ran out and another
// took the action over, the first owner's Complete fails with ErrNotOwner
// and changes nothing. A takeover keeps the action's identity, creation
// time and history, and adds an attempt.
//
// An owner that restarts under a stable name (ReserveRequest.Owner, with a
// new ReserveRequest.Instance per process start) need not wait out the
// leases of its earlier run: Reserve treats a live lease granted to the
// same owner under another instance as expired (Input.Reclaim), and the
// takeover follows Resolve. An owner that loses an action that way while
// alive learns that two processes share its name (CheckOwnerShared,
// ErrOwnerShared).
//
// What is stored: the raw Key (inside the record, never in a Redis key
// name), the sealed fingerprint, the state, the owner name, instance and lease, the
// response status, a safe subset of its headers (never Authorization,
// Proxy-Authorization, Cookie or Set-Cookie), the body up to 64 KiB by
// default or else only its SHA-256, the attempt history (its newest 32
// entries by default, Config.MaxAttempts), and the creation
// and expiry times.
//
// # Retention and expiry
//
// A record lives for its retention (24 hours by default) from creation,
// extended while a lease is alive. After that it is dropped, and a request
// with the same key runs as a new action: it is reserved afresh, nothing is
// replayed, and even a different request is not a conflict. This matches
// how payment providers expire idempotency keys; choose a retention at
// least as long as your longest retry horizon. Stores report an expired
// record as absent; Resolve also accepts StateExpired so the rule is
// spelled out on the command line.
//
// # Rate limits
//
// A rate-limited destination never deletes or resets an action's record:
// Resolve turns a decision that would send into VerdictDelayed, the store
// writes nothing, and the action keeps its identity while it waits.
//
// # Stuck work
//
// Sweep lists actions whose lease ran out (their owner died or stalled) and
// actions recorded as uncertain. Reconcile runs a Reconciler over them: it
// takes each over, asks the destination what happened, and records the
// answer with Settle; an action it finds never sent (its owner promised to
// mark it before sending and died first) is released as failed, with no
// question asked. A record Sweep cannot decode is skipped and reported
// beside the listing, never hiding the others.
//
// # Redis
//
// A Redis store needs a Redis that never evicts keys: every record has a
// TTL, so under any maxmemory-policy but noeviction memory pressure can
// drop a completed record and run its action again. NewRedis checks the
// policy and refuses otherwise (RedisConfig.AllowEviction opts out).
// With RedisConfig.WaitReplicas, the grant, the sending mark and the
// outcome each wait for the replicas, and the call fails with
// ErrNotReplicated (sending nothing) when they do not acknowledge.
package ledger
