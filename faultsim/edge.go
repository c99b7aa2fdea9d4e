package faultsim

// The provider's edges: answers beyond a plain status that real providers
// give (redirects to a POST, 200s carrying an error, slow bodies, answers
// after the caller has gone, each preset's documented refusals), the
// presets whose routes read them, and the worker that follows redirects
// as http.Client does.

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/presets"
)

// The edge answers, drawn into an action's Replies beside the plain ones.
const (
	replyMoved301    replyKind = iota + replyLate + 1 // 301 to the same path elsewhere, not applied
	replyMoved302                                     // 302, not applied
	replySeeOther                                     // applies, 303 to the created resource
	replyMoved307                                     // 307 (GitHub's renamed repository), not applied
	replyMoved308                                     // 308, not applied
	replyRateLimited                                  // GitHub GraphQL: 200, RATE_LIMITED, data null, not applied
	replyPartial                                      // GitHub GraphQL: 200 with data and errors, applied
	replyThrottled                                    // Shopify GraphQL: 200, THROTTLED, not applied
	replyRefusal                                      // the preset's documented refusal, not applied
	replySlowBody                                     // applies, 201, the body's end a third of a lease later
)

var edgeReplyNames = [...]string{"301", "302", "303", "307", "308", "graphql-rate-limited",
	"graphql-data-and-errors", "shopify-throttled", "preset-refusal", "slow-body"}

// edgeStatus is the status of a redirect kind.
var edgeStatus = map[replyKind]int{replyMoved301: 301, replyMoved302: 302, replySeeOther: 303, replyMoved307: 307, replyMoved308: 308}

// preset is the provider a schedule's routes run under: its Route's
// classifier, key header and key policy, and the path its calls take.
type preset struct {
	name string
	// route returns the preset's Route.
	route func() retrybudget.Route
	// path is the path of action a's request; graphQL says it is a
	// GraphQL endpoint's.
	path func(a int, graphQL bool) string
	// refusal is the preset's documented "not processed" answer.
	refusal func(now time.Time) (int, http.Header, string)
}

// presetsDrawn are the presets a schedule may run under, beside none.
var presetsDrawn = []preset{
	{name: "github", route: presets.GitHub,
		path: func(a int, graphQL bool) string {
			if graphQL {
				return "/graphql"
			}
			return "/repos/acme/shop/issues"
		},
		refusal: func(now time.Time) (int, http.Header, string) { // the primary limit, spent
			return 403, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {resetIn(now, time.Second)}},
				`{"message":"API rate limit exceeded"}`
		}},
	{name: "stripe", route: presets.Stripe,
		path: func(int, bool) string { return "/v1/charges" },
		refusal: func(time.Time) (int, http.Header, string) { // another request under the key runs
			return 409, nil, `{"error":{"type":"idempotency_error","code":"idempotency_key_in_use"}}`
		}},
	{name: "shopify", route: presets.Shopify,
		path: func(int, bool) string { return "/admin/api/2024-10/graphql.json" },
		refusal: func(time.Time) (int, http.Header, string) {
			return 429, http.Header{"Retry-After": {"0.5"}}, `{"errors":"Exceeded 2 calls per second for api client."}`
		}},
	{name: "openai", route: presets.OpenAI,
		path: func(int, bool) string { return "/v1/responses" },
		refusal: func(time.Time) (int, http.Header, string) { // a billing stop: waiting buys no credit
			return 429, nil, `{"error":{"type":"insufficient_quota","code":"insufficient_quota"}}`
		}},
	{name: "twilio", route: presets.Twilio,
		path: func(int, bool) string { return "/2010-04-01/Accounts/AC0123/Messages.json" },
		refusal: func(time.Time) (int, http.Header, string) { // not processed, Twilio says
			return 429, nil, `{"code":20429,"message":"Too Many Requests"}`
		}},
	{name: "paypal", route: presets.PayPal,
		path: func(int, bool) string { return "/v2/checkout/orders" },
		refusal: func(time.Time) (int, http.Header, string) {
			return 429, nil, `{"name":"RATE_LIMIT_REACHED"}`
		}},
}

func resetIn(now time.Time, d time.Duration) string {
	return strconv.FormatInt(now.Add(d+time.Second-1).Unix(), 10)
}

// drawEdges draws the schedule's preset and the edge answers into its
// actions' replies, from a stream of its own, so that adding edges moves
// no other draw of a seed.
func drawEdges(seed int64, s *Schedule) {
	rng := rand.New(rand.NewPCG(uint64(seed), 0xed9e))
	if i := rng.IntN(len(presetsDrawn) + 3); i < len(presetsDrawn) { // none in 3 of 9
		p := presetsDrawn[i]
		s.Preset = &p
		s.Honours = p.route().Config.KeysHonoured
	}
	if rng.IntN(4) == 0 {
		return // the plain repertoire only
	}
	for i := range s.Actions {
		a := &s.Actions[i]
		a.GraphQL = s.Preset != nil && s.Preset.name == "github" && rng.IntN(2) == 0
		kinds := []replyKind{replyMoved301, replyMoved302, replySeeOther, replyMoved307, replyMoved308, replySlowBody, replyLate}
		if s.Preset != nil {
			kinds = append(kinds, replyRefusal)
			switch {
			case a.GraphQL: // a GraphQL endpoint's edges, as often as the rest together
				kinds = append(kinds, slices.Repeat([]replyKind{replyRateLimited, replyRateLimited, replyPartial}, 3)...)
			case s.Preset.name == "shopify":
				kinds = append(kinds, slices.Repeat([]replyKind{replyThrottled}, 8)...)
			}
		}
		for j := range a.Replies {
			if rng.IntN(2) == 0 {
				a.Replies[j] = kinds[rng.IntN(len(kinds))]
			}
		}
	}
}

// path is the path of action a's request.
func (s *Schedule) path(a int) string {
	if s.Preset == nil {
		return "/v1/charges"
	}
	return s.Preset.path(a, s.Actions[a].GraphQL)
}

// routes are the Transports' routes: the schedule's preset at the
// simulated provider, or none.
func (r *Run) routes() []retrybudget.Route {
	if r.s.Preset == nil {
		return nil
	}
	rt := r.s.Preset.route().At("http://" + simHost)
	rt.Config.Jitter = -1 // a seed reruns its waits
	return []retrybudget.Route{rt}
}

// keyHeader is the header the provider reads the idempotency key from.
func (s *Schedule) keyHeader() string {
	if s.Preset != nil {
		if h := s.Preset.route().Config.KeyHeader; h != "" {
			return h
		}
	}
	return retrybudget.DefaultKeyHeader
}

// send sends one request of a worker in p: through http.Client, which
// follows redirects as its rules say (a 301, 302 or 303 to a POST as a
// GET; a 307 or 308 with the body, when GetBody can rewind it), when the
// schedule's provider may redirect; else straight to the Transport.
func (r *Run) send(p *simProc, req *http.Request) (*http.Response, error) {
	if !r.s.redirects() {
		return p.tr.RoundTrip(req)
	}
	return (&http.Client{Transport: p.tr}).Do(req)
}

// redirects reports whether any action's provider answers a redirect.
func (s *Schedule) redirects() bool {
	for _, a := range s.Actions {
		for _, k := range a.Replies {
			if edgeStatus[k] != 0 {
				return true
			}
		}
	}
	return false
}

// edge answers arrival n of action a when kind is an edge that does not
// apply the request (a moved resource, a refusal, a rate limit in a
// 200), or applies it late; ok is false for the kinds the provider
// applies and answers as usual (edgeAnswer).
func (p *simProvider) edge(req *http.Request, a, n int, kind replyKind, key string) (resp *http.Response, err error, ok bool) {
	now := time.Now()
	switch kind {
	case replyMoved301, replyMoved302, replyMoved307, replyMoved308:
		// A moved resource: the provider redirects before it looks at
		// the key or applies anything.
		p.r.Logf("provider: action %d arrival %d: %d, not applied", a, n, edgeStatus[kind])
		return answer(req, edgeStatus[kind], http.Header{"Location": {movedURL(req)}}, `{"message":"Moved"}`), nil, true
	case replyRateLimited:
		p.r.Logf("provider: action %d arrival %d: 200 RATE_LIMITED, not applied", a, n)
		return answer(req, http.StatusOK, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {resetIn(now, time.Second)}},
			`{"data":null,"errors":[{"type":"RATE_LIMITED","message":"API rate limit exceeded"}]}`), nil, true
	case replyThrottled:
		p.r.Logf("provider: action %d arrival %d: 200 THROTTLED, not applied", a, n)
		return answer(req, http.StatusOK, nil, `{"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED"}}],`+
			`"extensions":{"cost":{"requestedQueryCost":10,"actualQueryCost":null,`+
			`"throttleStatus":{"maximumAvailable":1000,"currentlyAvailable":5,"restoreRate":50}}}}`), nil, true
	case replyRefusal:
		status, h, body := p.r.s.Preset.refusal(now)
		p.r.Logf("provider: action %d arrival %d: %s refusal %d, not applied", a, n, p.r.s.Preset.name, status)
		return answer(req, status, h, body), nil, true
	}
	return nil, nil, false
}

// movedURL is where a moved resource went: the same path (so the route
// stays the preset's) with another query.
func movedURL(req *http.Request) string {
	u := *req.URL
	q := u.Query()
	q.Set("moved", strconv.Itoa(len(q["moved"])+1))
	u.RawQuery = q.Encode()
	return u.String()
}

// apply applies one request of the call ci, deduplicated by key where the
// provider honours keys, and reports whether it did.
func (p *simProvider) apply(ci *callInfo, key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	applied := !p.honours || key == "" || !p.keys[key]
	if applied {
		p.effects[ci.action]++
		p.byCall[ci.id]++
		if p.honours && key != "" {
			p.keys[key] = true
		}
	}
	return applied
}

// edgeAnswer is the answer to an applied request of an edge kind that
// applies it as usual; ok is false for every other kind.
func (p *simProvider) edgeAnswer(req *http.Request, a int, kind replyKind) (*http.Response, bool) {
	switch kind {
	case replySeeOther:
		u := *req.URL
		u.RawQuery = "order=" + strconv.Itoa(a)
		return answer(req, http.StatusSeeOther, http.Header{"Location": {u.String()}}, ""), true
	case replyPartial:
		return answer(req, http.StatusOK, nil, fmt.Sprintf(`{"data":{"createIssue":{"order":%d}},`+
			`"errors":[{"type":"RATE_LIMITED","message":"API rate limit exceeded"}]}`, a)), true
	case replySlowBody:
		return p.slowBody(req, a), true
	}
	return nil, false
}

// slowBody answers 201 with a body whose first half comes at once and the
// rest a third of a lease later, or never if the caller leaves first.
func (p *simProvider) slowBody(req *http.Request, a int) *http.Response {
	pr, pw := io.Pipe()
	body := fmt.Sprintf(`{"order":%d,"status":"created"}`, a)
	p.r.Go(func() {
		if _, err := io.WriteString(pw, body[:len(body)/2]); err != nil {
			return
		}
		t := time.NewTimer(p.r.w.Lease / 3)
		defer t.Stop()
		select {
		case <-t.C:
			io.WriteString(pw, body[len(body)/2:])
			pw.Close()
		case <-req.Context().Done():
			pw.CloseWithError(req.Context().Err())
		}
	})
	resp := answer(req, http.StatusCreated, nil, "")
	resp.Body, resp.ContentLength = pr, -1
	return resp
}

// read answers a GET, a redirect hop of a 301, 302 or 303: the created
// resource where the action applied, else nothing there.
func (p *simProvider) read(req *http.Request, a int) *http.Response {
	p.mu.Lock()
	applied := p.effects[a] > 0
	p.mu.Unlock()
	if req.URL.Query().Get("order") != "" && applied {
		return answer(req, http.StatusOK, nil, fmt.Sprintf(`{"order":%d}`, a))
	}
	return answer(req, http.StatusNotFound, nil, `{"message":"Not Found"}`)
}

// checkDone checks that a call the worker reads as done (Next's
// StepDone) left the action applied: a 200 that says "not processed" (a
// GraphQL rate limit) read as success is done, never applied.
func (r *Run) checkDone(a, run int, resp *http.Response, err error) {
	step, o := retrybudget.Next(resp, err)
	if step != retrybudget.StepDone {
		return
	}
	r.prov.mu.Lock()
	effects := r.prov.effects[a]
	r.prov.mu.Unlock()
	if effects == 0 {
		r.violate("done, never applied", "action %d run %d: Next says done (status %d, replayed %v), the provider applied none of its requests",
			a, run, o.StatusCode, o.Replayed)
	}
}

// checkRecordDone checks that a record completed with a success (a 2xx,
// or a 303: applied, see the result) belongs to an applied action.
func (r *Run) checkRecordDone(ctx context.Context, a int, effects int) {
	if effects > 0 {
		return
	}
	for hop := 0; hop <= 3; hop++ {
		k := r.recordKey(a)
		if hop > 0 {
			k.Key += "#redirect-" + strconv.Itoa(hop)
		}
		rec, err := r.store.Get(ctx, k)
		if err != nil {
			continue
		}
		if rec.State != ledger.StateCompleted || rec.Outcome == nil {
			continue
		}
		if s := rec.Outcome.Status; s >= 200 && s < 300 || s == http.StatusSeeOther {
			r.violate("done, never applied", "action %d: %s recorded completed with %d, the provider applied none of its requests", a, k.Key, s)
		}
	}
}

// recordKey is the ledger key of action a's record: its Action scoped as
// the schedule's preset scopes it (Config.ActionScope).
func (r *Run) recordKey(a int) retrybudget.Action {
	act := simActionKey(a)
	if r.s.Preset == nil {
		return act
	}
	scope := r.s.Preset.route().Config.ActionScope
	if scope == nil {
		return act
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+simHost+r.s.path(a), nil)
	if err != nil {
		panic(err)
	}
	return retrybudget.ScopedAction(act, scope(req))
}
