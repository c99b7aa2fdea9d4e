package retrybudget

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/retrybudget/retrybudget/internal/readahead"
	"github.com/retrybudget/retrybudget/ledger"
)

// An SDK with retries of its own (stripe-go, openai-go at their defaults)
// re-sends a call the Transport has already given up on, multiplying the
// Transport's attempts by its own and undoing its stops: a POST declared
// uncertain is sent again, a Retry-After is cut short. The Transport
// recognises such a re-send and answers it at once from the give-up,
// without sending, counting it in the Budget as a retry rather than as a new
// call. It recognises it by the key the SDK put in the key header (stripe-go
// keeps one per call across its retries) or, for an SDK that numbers its
// re-sends in a retry-count header (openai-go's X-Stainless-Retry-Count), by
// that number above zero and the request's fingerprint.

// resendWindow is how long a give-up answers re-sends: longer than any
// SDK's sleep between two sends (stripe-go at most 5s, openai-go 8s),
// short enough that a job re-run by its queue later is a new call.
const resendWindow = 30 * time.Second

// resendBodyLimit and resendBodyWait bound the response body kept to answer
// re-sends with; a larger or slower one is answered with an empty body.
// resendHeaderLimit bounds the bytes of the response headers kept (see
// resendHeader).
const (
	resendBodyLimit   = 64 << 10
	resendBodyWait    = 100 * time.Millisecond
	resendHeaderLimit = 8 << 10
)

// resendFirst are the response headers an SDK or a caller reads to decide
// on a re-send, or to read the body: kept before any other.
var resendFirst = [...]string{
	"Retry-After", "Retry-After-Ms", "X-Should-Retry", "Stripe-Should-Retry",
	"Content-Type", "Content-Encoding", "Content-Language",
	"Idempotency-Key", "Request-Id", "X-Request-Id",
}

// resendHeader returns the part of a give-up's response headers kept to
// answer re-sends with: resendFirst, then every other header in name order,
// each whole while the total stays within resendHeaderLimit bytes (a header
// that does not fit is left out), and never a credential
// (Authorization, Proxy-Authorization, Cookie, Set-Cookie). A destination
// the caller chooses may answer with megabytes of headers; a give-up is kept
// for resendWindow, so it keeps little.
func resendHeader(h http.Header) http.Header {
	kept, room := http.Header{}, resendHeaderLimit
	keep := func(name string) {
		vs, ok := h[name]
		if !ok || kept[name] != nil {
			return
		}
		switch name {
		case "Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie":
			return
		}
		n := headerBytes(name, vs)
		if n > room {
			return
		}
		room -= n
		// Copied, so that a kept value never holds on to a larger buffer.
		c := make([]string, len(vs))
		for i, v := range vs {
			c[i] = strings.Clone(v)
		}
		kept[name] = c
	}
	for _, name := range resendFirst {
		keep(name)
	}
	for _, name := range slices.Sorted(maps.Keys(h)) {
		keep(name)
	}
	return kept
}

// headerBytes counts the bytes of one header's name and values.
func headerBytes(name string, vs []string) int {
	n := 0
	for _, v := range vs {
		n += len(name) + len(v)
	}
	return n
}

// retryCount reads the number an SDK gives its re-sends of one call, 0 on
// the first send; ok is false when the request carries no such header.
func retryCount(h http.Header) (n int, ok bool) {
	v := retryCountValue(h)
	if v == "" {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil
}

// retryCountValue returns the retry-count header h carries; empty when none.
func retryCountValue(h http.Header) string {
	for _, name := range [...]string{"X-Stainless-Retry-Count"} { // canonical forms
		if v := headerValue(h, name); v != "" {
			return v
		}
	}
	return ""
}

// resendIDs returns the ids under which the call's give-up answers an
// SDK's re-sends: the key the caller or SDK put in the key header, and the
// fingerprint when an SDK numbers its sends. lookup is the ids to look the
// call itself up by: the key, and the fingerprint only when the call is a
// numbered re-send (a first send of an identical request is a new call).
//
// Every id is scoped by who sends the call and to whom (see resendScope):
// two callers may send identical requests (the same body to the same path),
// and one's re-send must never be answered with another's give-up, which
// would hand it the other's response, and not send it.
func (c *call) resendIDs() (ids, lookup []string, numbered bool) {
	scope := c.resendScope()
	if k := headerValue(c.req.Header, c.p.cfg.KeyHeader); k != "" {
		ids = append(ids, c.p.gaveUp.id(scope, "key", k))
	}
	n, ok := retryCount(c.req.Header)
	lookup = ids
	if !ok {
		return ids, lookup, false
	}
	body, err := c.body.content(c.p.cfg.MaxBodyBuffer)
	if err != nil {
		return ids, lookup, n > 0
	}
	// Fingerprint leaves out the host and the credentials (they belong in
	// a ledger Key); the scope holds them.
	fp := ledger.Fingerprint(c.req.Method, c.req.URL, c.req.Header, []string{"Authorization"}, body)
	ids = append(ids, c.p.gaveUp.id(scope, "fp", fp))
	if n > 0 {
		lookup = ids
	}
	return ids, lookup, n > 0
}

// resendCredentials are the request headers that say whose call it is: the
// credentials providers take (Authorization, an API key header, a cookie)
// and the account a platform key acts for (Stripe-Account, OpenAI's
// organization and project). A re-send under other values is another
// caller's.
var resendCredentials = [...]string{
	"Authorization", "Proxy-Authorization", "Cookie",
	"X-Api-Key", "Api-Key", "X-Goog-Api-Key",
	"Stripe-Account", "Openai-Organization", "Openai-Project",
}

// resendScope returns what keeps the give-up ids of the call apart from
// every other caller's: the share of the memory it counts against (see
// memoryScope), the scheme and host it is sent to, its Action's tenant,
// operation and key, and the values of its credential headers. The ids are
// keyed hashes of it (giveUps.id), so no credential is kept.
func (c *call) resendScope() []string {
	u := c.req.URL
	parts := []string{c.memoryScope(), strings.ToLower(u.Scheme), strings.ToLower(u.Host)}
	if a, ok := ActionFrom(c.req.Context()); ok && !c.p.noAction {
		parts = append(parts, "action", a.Tenant, a.Operation, a.Key)
	} else {
		parts = append(parts, "")
	}
	for _, name := range resendCredentials { // canonical forms
		vs := c.req.Header[name]
		parts = append(parts, strconv.Itoa(len(vs)))
		parts = append(parts, vs...)
	}
	return parts
}

// resendCheck is what repeat found about a call that may be an SDK's
// re-send.
type resendCheck struct {
	// answer is the earlier give-up that answers the call; nil when none
	// does.
	answer *giveUp
	// refused reports a numbered re-send of a call given up on elsewhere
	// that the Budget refused: it is not sent.
	refused bool
}

// repeat tells whether the call is an SDK's re-send of an earlier give-up.
// A numbered re-send of a call given up on elsewhere (another process, or
// too long ago) counts as a retry in the Budget, and is not sent when the
// Budget refuses it; a re-send answered from a give-up counts as a retry
// whatever the Budget says. It writes nothing of the Outcome.
func (c *call) repeat() resendCheck {
	if !c.resendable {
		return resendCheck{}
	}
	_, lookup, numbered := c.resendIDs()
	if len(lookup) == 0 {
		return resendCheck{}
	}
	if g := c.p.gaveUp.get(lookup, c.p.clock.Now()); g != nil {
		c.withdraw() // nothing is sent, but the SDK did retry
		return resendCheck{answer: g}
	}
	if !numbered {
		return resendCheck{}
	}
	c.numbered = true
	return resendCheck{refused: !c.withdraw()}
}

// answer ends a re-sent call with its give-up: the same response, or the
// same error.
func (c *call) answer(g *giveUp) (*http.Response, error) {
	c.body.close()
	c.out = g.out
	c.out.Repeated = true
	if obs := c.p.cfg.Observer.GiveUp; obs != nil {
		obs(GiveUpEvent{Request: c.req, Outcome: c.out})
	}
	if g.status == 0 {
		return nil, &Error{Outcome: c.out, Cause: g.cause}
	}
	resp := replayResponse(c.req, &ledger.Outcome{Status: g.status, Header: g.header, Body: g.body})
	return c.attach(resp, noCancel), nil
}

// comeBack reports whether a give-up for reason names in its RetryAt a time
// the caller was told to come back at (the provider's, the limiter's, the
// ledger lease's, the deadline's), rather than the next backoff step of a
// call that used up its attempts, whose re-sends stay answered from the
// give-up for the whole window, so an SDK's own retries never stack on the
// Transport's.
func comeBack(reason error) bool {
	return reason == ErrWaitTooLong || reason == ErrRateLimited || reason == ErrPending || reason == ErrDeadline
}

// remember keeps the call's give-up for its SDK's re-sends.
func (c *call) remember(resp *http.Response, cause error) {
	if !c.resendable || c.out.Repeated {
		return
	}
	// The ids are those repeat looked the call up by, made again rather
	// than kept in every call for the few that give up: the request is the
	// same, and its body was read once (see requestBody.content).
	ids, _, _ := c.resendIDs()
	if len(ids) == 0 {
		return
	}
	now := c.p.clock.Now()
	until := now.Add(resendWindow)
	if at := c.out.RetryAt; comeBack(c.out.Reason) && !at.IsZero() && at.Before(until) {
		// The give-up told the caller when to come back: from then on the
		// call is new work, not a re-send to answer from the give-up.
		until = at
	}
	// An outcome that may have been applied and must not be repeated is
	// kept until it expires: losing it would let a re-send through.
	kept := c.out.MaybeApplied && !c.repeatable || c.out.Reason == ErrUncertain
	g := &giveUp{out: c.out, cause: cause, until: until, kept: kept}
	// A generated key is a slice of its batch (see keyMint): a give-up
	// kept for the window keeps a copy of its own.
	g.out.Key = strings.Clone(g.out.Key)
	if resp != nil {
		g.status, g.header = resp.StatusCode, resendHeader(resp.Header)
		g.body, _ = readahead.Read(resp, resendBodyLimit, resendBodyWait)
	}
	if !c.p.gaveUp.put(ids, c.memoryScope(), g, now) {
		c.out.NotRemembered = true
	}
}

// memoryScope names the share of the give-up memory the call's give-ups
// count against: its Action's tenant, else its destination.
func (c *call) memoryScope() string {
	if a, ok := ActionFrom(c.req.Context()); ok && !c.p.noAction && a.Tenant != "" {
		return "tenant\x00" + a.Tenant
	}
	return "dest\x00" + c.dest
}
