package retrybudget

import (
	"net/http"
	"strconv"
)

// Redirects of a request under an Action. The Transport does not follow
// redirects: http.Client does, as net/http's RoundTripper contract asks
// ("RoundTrip should not attempt to handle higher-level protocol details
// such as redirects"), with its rules intact (sensitive headers dropped
// across hosts, CheckRedirect, the cap of 10 hops, the cookie Jar). Each
// hop reaches RoundTrip as a request of its own, with req.Response set to
// the answer that caused it, and the Action of the first request in its
// context. The first request's record holds the redirect as its answer,
// and a rerun replays it, so http.Client follows it again: the hop must
// have a record of its own, or the rerun sends it again (a second charge
// behind a 307 or 308, which keep the method and body, RFC 9110 §15.4.8,
// §15.4.9). It cannot share the first request's record: its URL, part of
// the fingerprint, differs, and the record already holds the redirect.

// redirectAction returns the action of the hop-th redirect hop of a request
// under a: the same tenant and operation, and a key derived from a's and
// the hop number, so every run of a derives the same hop actions, each
// with a record and an idempotency key of its own (a provider that keeps
// a's key keeps it for the first URL, and may refuse it on another),
// except where the provider honours keys (hopKeyAction).
func redirectAction(a Action, hop int) Action {
	a.Key += "#redirect-" + strconv.Itoa(hop)
	return a
}

// redirectHop returns how many redirects led to req: zero for a request a
// caller made, n for the n-th hop http.Client follows (req.Response is the
// answer that caused it, and its Request the hop before).
func redirectHop(req *http.Request) int {
	n := 0
	for r := req; r != nil && r.Response != nil; r = r.Response.Request {
		n++
	}
	return n
}

// hopKeyAction returns the action whose idempotency key a redirect hop
// sends: hop's own, except where the provider honours keys (honoured) and
// the redirect keeps the method and body (307, 308: RFC 9110 §15.4.8,
// §15.4.9), where it is origin's. Such a hop is the same request sent
// elsewhere, and may reach a provider that already applied it under
// origin's key: a provider that redirects before it looks at the key (a
// gateway, a moved resource) applied the first attempt at the old URL,
// then redirects the retry; under a key of its own the hop would be
// applied again. The ledger record stays hop's.
func hopKeyAction(origin, hop Action, req *http.Request, honoured bool) Action {
	if !honoured {
		return hop
	}
	switch req.Response.StatusCode {
	case http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return origin
	}
	return hop
}

// unsafeHopReason is the reason a redirect hop of a request that was not
// idempotent gives up with, and its cause: that request was applied (a
// 303, RFC 9110 §15.4.4) or may have been (any 3xx to a POST: a provider
// may apply it and redirect to the result, §15.4.2-3). The hop's failure
// says nothing of it, so the call is maybe applied. Unless a ledger
// recorded the request (a rerun replays its redirect), a reason Next
// reads as StepRetry is ErrUncertain instead (StepHold), its own reason
// kept in the cause: the worker's next run would send the request again.
func (c *call) unsafeHopReason(reason, cause error) (error, error) {
	c.out.MaybeApplied = true
	if c.unsafeRecorded || (Outcome{Reason: reason}).step() != StepRetry {
		return reason, cause
	}
	return ErrUncertain, withCause(cause, reason)
}
