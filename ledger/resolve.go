package ledger

// Input is everything Resolve looks at. Stores fill it from the stored
// record, their own clock and the ReserveRequest.
type Input struct {
	// State is the stored state. StateAbsent and StateExpired ignore every
	// other field except Limited.
	State State
	// Fingerprint is the incoming request's fingerprint (see Fingerprint).
	Fingerprint string
	// StoredFingerprint is the fingerprint stored with the action. The two
	// are compared as exact strings.
	StoredFingerprint string
	// LeaseExpired reports that the owner's lease ended before now. It only
	// matters for StateInProgress, where it means the owner probably died.
	LeaseExpired bool
	// Limited reports that the destination is rate limited right now. It
	// turns every decision that would send into VerdictDelayed and changes
	// nothing else: a reconciler only asks, so it still runs.
	Limited bool
	// Reconciler reports that a reconciler is configured for the
	// destination.
	Reconciler bool
	// KeysHonoured reports that the destination deduplicates requests by
	// idempotency key, so re-sending under the same provider key cannot
	// cause a second effect.
	KeysHonoured bool
	// Regrant reports that the action's current grant was made to this
	// very request (the same ReserveRequest.Nonce): the reply to it was
	// lost and the request sent again. Only StateInProgress looks at it.
	Regrant bool
	// Granted is the Verdict of that grant, for Regrant.
	Granted Verdict
	// Unsent reports that the current owner promised to mark the action
	// before its first send (ReserveRequest.MarksSending) and no owner
	// ever did (Store.MarkSending): nothing can have left. Only an expired
	// lease looks at it.
	Unsent bool
	// Reclaim reports that the lease, though alive, was granted to an
	// earlier run of the requesting owner (the same ReserveRequest.Owner,
	// another ReserveRequest.Instance): that process restarted, so its
	// lease counts as expired and the action is decided as for a dead
	// owner. Only StateInProgress looks at it, and a Regrant comes first.
	Reclaim bool
	// Settling reports that the action's last send is within its settle
	// time (Record.SettleUntil is after now): the destination may still be
	// processing it and apply it later, even if the sender is gone. It
	// matters only where a reconciler would be asked about an action that
	// may have been sent and keys are not honoured: a "never performed"
	// answer then cannot be trusted yet (Decision.Settling).
	Settling bool
}

// Decision is Resolve's answer.
type Decision struct {
	// Verdict is what happens to the request.
	Verdict Verdict
	// Send reports whether the caller should send the request now. It is
	// true exactly for VerdictCreated, VerdictRetry and VerdictResend.
	Send bool
	// Path is the decision path in words, one step per element, so an
	// engineer can see why work was replayed, held or rejected.
	Path []string
	// Settling reports, with VerdictReconcile, that the action's last
	// send is within its settle time and the destination does not honour
	// keys: the reconciler is asked, and a StateCompleted answer settles
	// the action at once, but a StateFailed ("not found") answer must not
	// send it again, since the destination may still apply the first
	// request. The owner records such an answer as uncertain and the
	// caller comes back after Reservation.RetryAfter, when the settle
	// time has passed.
	Settling bool
}

// settlingStep is the step of a reconcile decision made inside the settle
// time (Decision.Settling).
const settlingStep = "the last send is within its settle time and keys are not honoured: the destination may still apply it, so only a found effect settles it now; \"not found\" leaves it uncertain until the settle time has passed"

// Resolve decides what to do with a request for an action in a given
// stored state. It is the ledger's whole decision matrix, as a pure
// function: both stores and the retrybudget Transport apply exactly this.
//
//	stored state              same fingerprint                     different fingerprint
//	absent or expired         created (reserve, send)              created
//	in progress, lease alive  pending (hold, retry after lease)    conflict
//	in progress, own grant    the grant again (its reply was lost) -
//	completed                 replayed (stored response)           conflict
//	failed, no effect         retry (take over, send again)        conflict
//	in progress, lease gone,  retry (take over, send again)        conflict
//	never marked as sending
//	in progress, lease gone,  reconcile if a reconciler is set,    conflict
//	or uncertain              else resend if keys are honoured,
//	                          else uncertain (operator)
//	the same, inside the      reconcile, but "not found" does not   conflict
//	settle time, keys not     send: it stays uncertain until the
//	honoured                  settle time has passed
//
// A lease alive but granted to an earlier instance of the requesting
// owner (Reclaim: the owner restarted) counts as gone.
//
// When Limited is set, created, retry and resend become delayed, except
// for a request's own grant, which is returned as it was made.
// An unknown State is treated as uncertain: never send what we cannot
// classify.
func Resolve(in Input) Decision {
	var d Decision
	step := func(s string) { d.Path = append(d.Path, s) }
	send := func(v Verdict, why string) Decision {
		step(why)
		if in.Limited {
			step("destination is rate limited: wait without sending; the record is kept as it is, not deleted or reset")
			d.Verdict = VerdictDelayed
			return d
		}
		d.Verdict, d.Send = v, true
		return d
	}

	switch in.State {
	case StateAbsent:
		step("no live record: never reserved, or dropped after its retention")
		return send(VerdictCreated, "reserve the action atomically for one owner with a lease, then send")
	case StateExpired:
		step("record is past its retention: it is forgotten and its stored outcome is not replayed")
		return send(VerdictCreated, "run as a new action: reserve it for one owner with a lease, then send")
	case StateInProgress, StateCompleted, StateFailed, StateUncertain:
	default:
		step("stored state " + in.State.String() + " is unknown")
		step("refuse to send what cannot be classified: outcome uncertain")
		d.Verdict = VerdictUncertain
		return d
	}

	step("stored state is " + in.State.String())
	if in.Fingerprint != in.StoredFingerprint {
		step("request fingerprint differs from the stored one: the key was reused for a different request")
		step("reject without sending")
		d.Verdict = VerdictConflict
		return d
	}
	step("request fingerprint matches the stored one")
	if in.State == StateInProgress && in.Reclaim && !in.LeaseExpired && !in.Regrant {
		step("the lease is alive but held by an earlier instance of the requesting owner, which restarted: treat its lease as expired")
		in.LeaseExpired = true
	}

	switch {
	case in.State == StateCompleted:
		step("do not send: return the stored response, marked as replayed")
		d.Verdict = VerdictReplayed
		return d
	case in.State == StateFailed:
		return send(VerdictRetry, "the last attempt failed before any effect: take over and send again under the same key")
	case in.State == StateInProgress && in.Regrant:
		step("the current grant was made to this very request (same nonce): the reply to it was lost and the request sent again")
		step("return the grant as it was made, " + in.Granted.String())
		d.Verdict, d.Send = in.Granted, in.Granted == VerdictCreated || in.Granted == VerdictRetry || in.Granted == VerdictResend
		if d.Verdict == VerdictReconcile && in.Settling && !in.KeysHonoured {
			step(settlingStep)
			d.Settling = true
		}
		return d
	case in.State == StateInProgress && !in.LeaseExpired:
		step("the owner's lease is alive: another worker is sending")
		step("do not send: hold as pending and retry after the lease")
		d.Verdict = VerdictPending
		return d
	case in.State == StateInProgress && in.Unsent:
		step("the owner's lease expired before any owner marked the action as sending: nothing was sent")
		return send(VerdictRetry, "take over and send under the same key")
	case in.State == StateInProgress:
		step("the owner's lease expired: it died or stalled mid-call, so the destination may have acted")
	default:
		step("the outcome was recorded as uncertain: the destination may have acted")
	}

	switch {
	case in.Reconciler:
		step("a reconciler is configured: take over and ask it what the destination did")
		if in.Settling && !in.KeysHonoured {
			step(settlingStep)
			d.Settling = true
		}
		d.Verdict = VerdictReconcile
		return d
	case in.KeysHonoured:
		step("no reconciler, but the destination honours idempotency keys")
		return send(VerdictResend, "take over and re-send under the same provider key, which the destination deduplicates")
	default:
		step("no reconciler, and the destination does not honour idempotency keys")
		step("do not send: report the outcome as uncertain for manual reconciliation")
		d.Verdict = VerdictUncertain
		return d
	}
}
