package presets

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/internal/retryafter"
	"github.com/retrybudget/retrybudget/limiter"
	"github.com/retrybudget/retrybudget/rateheader"
)

// githubSecondaryWait is the wait GitHub asks for after a secondary rate
// limit that gives no other hint: "wait for at least one minute".
const githubSecondaryWait = time.Minute

// githubMaxWait is the preset's MaxWait: below githubSecondaryWait, so a
// secondary limit without retry-after ends the call at once.
const githubMaxWait = 30 * time.Second

// GitHub returns the policy for the GitHub REST API (api.github.com).
//
// Source (read 2026-12-03):
// https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api
// ("Exceeding the rate limit" and "Handle rate limit errors
// appropriately").
//
//   - Primary limit: a 403 or 429 with x-ratelimit-remaining: 0 is a
//     capacity answer; do not retry before x-ratelimit-reset, in UTC
//     epoch seconds. RetryAt and PauseUntil are the reset, so the
//     resource's boundary pauses until then.
//   - Secondary limit: a 403 or 429 with retry-after is a capacity answer
//     retried after that many seconds; with neither retry-after nor
//     remaining 0, GitHub asks for at least one minute, so RetryAt is one
//     minute on. The whole credential pauses that long (see below).
//   - A 429 without either header is taken as a secondary limit. A 403
//     without either header is a secondary limit only when its JSON body's
//     documentation_url points at the secondary rate limit documentation,
//     as go-github checks; any other 403 is a permission error (business),
//     never retried (our choice: retrying a refused permission every
//     minute would hide the error).
//   - GraphQL (/graphql): a query past the primary limit is answered 200
//     with errors[].type RATE_LIMITED (RATE_LIMIT, the error's code, has
//     been seen in its place) and x-ratelimit-remaining: 0; with data
//     absent or null the query did not run, so it is a capacity answer:
//     RetryAt and PauseUntil are x-ratelimit-reset (GitHub: do not retry
//     before it), one minute on without one, pausing the graphql resource.
//     A ledger then fails the action as not applied rather than storing
//     the refusal as its answer. A 200 with data beside such an error may
//     have run, in part: it is the answer. The body is read for this only
//     on 200s to /graphql, at most 16 KiB and 100ms of it, and left in
//     place for the caller. Sources: GitHub's "Rate limits and query
//     limits for the GraphQL API" (the 200, the error and the reset, as
//     GitHub staff describe it in github/docs#22607); remaining above 0
//     on such an answer: octokit/plugin-throttling.js#632; the type
//     RATE_LIMIT: yanyongyu/githubkit#271.
//   - Any response, a success included, with x-ratelimit-remaining: 0 and
//     a reset ahead pauses the boundary until the reset: the next request
//     would be refused, and GitHub warns that continuing to send requests
//     while limited may get an integration banned.
//   - Key: GitHub documents no idempotency key, so none is sent (OmitKey)
//     and none is honoured: a
//     POST that may have been applied is not repeated (ErrUncertain).
//   - Three attempts, 1s doubling up to 30s; GitHub asks for exponential
//     waits and an error "after a specific number of retries" (the count
//     is our choice). MaxWait is 30s (our choice): a secondary limit
//     without retry-after (one minute) or a primary reset ends the call at
//     once with ErrWaitTooLong and RetryAt, instead of holding a worker in
//     RoundTrip, as go-github alone returns AbuseRateLimitError at once.
//     To wait instead, raise MaxWait on the copy (to 61s for the minute).
//     The limiters cap one cooldown at their MaxCooldown (five minutes by
//     default), so to hold the fleet until an hourly reset, raise
//     MaxCooldown to an hour.
//   - Boundary: the host and a hash of the Authorization header, and
//     within it (limiter.Within) the rate limit resource the request
//     counts against, since GitHub keeps a primary limit per resource and
//     a spent code_scanning_upload or search quota must not pause core
//     requests. The resource is read from the method and path as
//     go-github's GetRateLimitCategory reads it (core, search,
//     code_search, graphql, integration_manifest, source_import,
//     code_scanning_upload, scim, dependency_snapshots, dependency_sbom,
//     audit_log), our approximation of x-ratelimit-resource, which is only
//     known after the response.
//   - GitHub meters a personal access token or an OAuth token per user (all
//     of a user's tokens share the limit), and a GitHub App installation
//     per installation, whose tokens expire after an hour: a pause kept
//     under the old token's hash stops applying when the token is renewed,
//     while the quota stays spent. Name the metered unit with
//     GitHubBoundary("installation:" + id) or GitHubBoundary("user:" +
//     login) on the copy.
//   - A secondary limit pauses the whole credential, every resource of
//     it, REST and GraphQL alike: GitHub's "About secondary rate limits"
//     (same page, read 2026-12-03) says of the concurrency limit "This
//     limit is shared across the REST API and GraphQL API", and warns that
//     continuing to make requests while rate limited may result in the
//     banning of the integration. The boundary is
//     limiter.Within(credential, resource), and a secondary limit's
//     classification carries PauseScopeUntil, so the Transport pauses
//     limiter.Scope of the boundary: the credential (or the unit named
//     with GitHubBoundary). A primary limit (x-ratelimit-remaining: 0)
//     pauses its resource only. A secondary limit is an answer with
//     retry-after, a 429 without a spent quota, or a 403 or 429 whose
//     documentation_url names the secondary rate limit documentation.
//   - Auxiliary: /app/installations/ (a GitHub App's installation token
//     requests) carries no Action.
func GitHub() retrybudget.Route {
	return retrybudget.Route{
		Name:      "github",
		Host:      "api.github.com",
		Auxiliary: []string{"/app/installations/"},
		Config: retrybudget.Config{
			OmitKey:     true,
			MaxWait:     githubMaxWait,
			MaxAttempts: 3,
			BaseDelay:   time.Second,
			MaxDelay:    30 * time.Second,
			Boundary:    scoped(limiter.ByCredential(), githubResource),
			Classifier:  rateheader.Classifier{Next: githubClassifier{}, Mode: rateheader.ResetEpoch},
		},
	}
}

// githubClassifier applies GitHub's primary and secondary rate limit rules
// to 403 and 429 answers; the rateheader.Classifier around it pauses the
// boundary when any answer says the quota is spent.
type githubClassifier struct{}

// Classify implements retrybudget.Classifier.
//
// A secondary limit pauses the credential's scope (PauseScopeUntil), a
// primary one the request's resource only (PauseUntil). An answer is a
// secondary limit when it carries retry-after (documented under secondary
// limits; should a primary answer carry it too, pausing the credential is
// the cautious reading), when its body names the secondary limit
// documentation, or when it is a 429 without a spent quota (a primary
// limit always says x-ratelimit-remaining: 0).
func (githubClassifier) Classify(a *retrybudget.AttemptResult) retrybudget.Classification {
	cls := retrybudget.DefaultClassifier{}.Classify(a)
	resp := a.Response
	now := a.Now
	if resp != nil && resp.StatusCode == http.StatusOK && githubGraphQLLimited(a.Request, resp) {
		// The query did not run: GitHub asks not to retry it before the
		// reset; without one, as for a spent quota without a time, a
		// minute. The limit is the graphql resource's (PauseUntil).
		at := now.Add(githubSecondaryWait)
		if q, ok := (rateheader.XRateLimit{Mode: rateheader.ResetEpoch}).Parse(resp.Header, now); ok && q.Reset.After(now) {
			at = q.Reset
		}
		cls.Class, cls.RetryAt, cls.PauseUntil = retrybudget.ClassCapacity, at, at
		return cls
	}
	if resp == nil || (resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusTooManyRequests) {
		return cls
	}
	if at, ok := retryafter.Parse(resp.Header.Get("Retry-After"), now); ok {
		cls.Class, cls.RetryAt, cls.PauseScopeUntil = retrybudget.ClassCapacity, at, at
		return cls
	}
	q, hasQuota := rateheader.XRateLimit{Mode: rateheader.ResetEpoch}.Parse(resp.Header, now)
	spent := hasQuota && q.Remaining == 0
	secondary := githubSecondaryBody(resp) || (resp.StatusCode == http.StatusTooManyRequests && !spent)
	switch {
	case spent && q.Reset.After(now):
		cls.Class, cls.RetryAt, cls.PauseUntil = retrybudget.ClassCapacity, q.Reset, q.Reset
	case spent || secondary:
		// A spent quota whose reset has passed (clock skew) is still a
		// rate limit. Without a time, GitHub asks for a minute.
		cls.Class, cls.RetryAt = retrybudget.ClassCapacity, now.Add(githubSecondaryWait)
	default:
		return cls
	}
	if secondary {
		cls.PauseScopeUntil = cls.RetryAt
	}
	return cls
}

// githubSecondaryBody reports whether a 403's JSON body names the
// secondary rate limit documentation in documentation_url, as GitHub's
// answers do ("...#about-secondary-rate-limits", formerly
// "#abuse-rate-limits"). The URL is a documented field, not message text.
func githubSecondaryBody(resp *http.Response) bool {
	var body struct {
		DocumentationURL string `json:"documentation_url"`
	}
	if !peekJSON(resp, &body) {
		return false
	}
	u := body.DocumentationURL
	return strings.Contains(u, "secondary-rate-limit") || strings.HasSuffix(u, "#abuse-rate-limits")
}

// githubGraphQLLimited reports whether resp, a 200 to req, is GitHub's
// answer to a GraphQL query past its primary rate limit: errors of type
// RATE_LIMITED (GitHub's documented value; RATE_LIMIT, the error's code, has
// been seen in its place) and no data. A query answered with data beside
// such an error may have run, at least in part, so it is the answer. Only
// requests to the graphql resource are read, through peekJSON's bounds.
func githubGraphQLLimited(req *http.Request, resp *http.Response) bool {
	if req == nil || req.URL == nil || githubResource(req) != "graphql" {
		return false
	}
	var body struct {
		// Data is the raw "data" member: absent or null when nothing ran.
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Type string `json:"type"`
		} `json:"errors"`
	}
	if !peekJSON(resp, &body) || (len(body.Data) > 0 && string(body.Data) != "null") {
		return false
	}
	for _, e := range body.Errors {
		if e.Type == "RATE_LIMITED" || e.Type == "RATE_LIMIT" {
			return true
		}
	}
	return false
}

// GitHubBoundary returns the GitHub preset's Boundary with unit, a name of
// the caller's choice for what GitHub meters (such as "installation:123"
// for a GitHub App installation, or "user:octocat" for a user's tokens), in
// place of the credential, still split by rate limit resource: the
// boundary is limiter.Within("github:"+unit, resource), and a secondary
// limit pauses every resource of the unit.
func GitHubBoundary(unit string) limiter.Boundary {
	return scoped(limiter.Fixed("github:"+unit), githubResource)
}

// githubResource names the rate limit resource a request counts against,
// from its method and path, as go-github's GetRateLimitCategory does
// (read 2026-12-03): the names are GitHub's x-ratelimit-resource values.
func githubResource(r *http.Request) string {
	p, m := r.URL.Path, r.Method
	switch {
	case strings.HasPrefix(p, "/search/code") && m == http.MethodGet:
		return "code_search"
	case strings.HasPrefix(p, "/search/"):
		return "search"
	case p == "/graphql" || strings.HasPrefix(p, "/graphql/"):
		return "graphql"
	case strings.HasPrefix(p, "/app-manifests/") && strings.HasSuffix(p, "/conversions") && m == http.MethodPost:
		return "integration_manifest"
	case strings.HasPrefix(p, "/repos/") && strings.HasSuffix(p, "/import") && m == http.MethodPut:
		return "source_import"
	case strings.HasSuffix(p, "/code-scanning/sarifs"):
		return "code_scanning_upload"
	case strings.HasPrefix(p, "/scim/"):
		return "scim"
	case strings.HasPrefix(p, "/repos/") && strings.HasSuffix(p, "/dependency-graph/snapshots") && m == http.MethodPost:
		return "dependency_snapshots"
	case strings.HasPrefix(p, "/repos/") && strings.HasSuffix(p, "/dependency-graph/sbom") && m == http.MethodGet:
		return "dependency_sbom"
	case strings.HasSuffix(p, "/audit-log"):
		return "audit_log"
	default:
		return "core"
	}
}
