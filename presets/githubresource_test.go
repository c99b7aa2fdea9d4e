package presets_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/limiter"
	"github.com/retrybudget/retrybudget/presets"
)

// TestGitHubSpentResourceLeavesCoreRunning spends the code_scanning_upload
// quota (a 403 with x-ratelimit-remaining: 0 and a reset ahead), then sends
// a core request through the same limiter: it must reach GitHub, since
// GitHub keeps a limit per resource.
func TestGitHubSpentResourceLeavesCoreRunning(t *testing.T) {
	reset := strconv.FormatInt(time.Now().Add(20*time.Minute).Unix(), 10)
	f := newFake(t,
		reply{status: 403, header: []string{"x-ratelimit-remaining", "0", "x-ratelimit-reset", reset,
			"x-ratelimit-resource", "code_scanning_upload", "Content-Type", "application/json"},
			body: `{"message":"API rate limit exceeded","documentation_url":"https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"}`},
		reply{status: 200, body: `{"id":1}`})
	lim, err := limiter.NewLocal(limiter.LocalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	cl := atFake(t, f, []retrybudget.Route{presets.GitHub()}, func(cfg *retrybudget.Config) { cfg.Limiter = lim })
	auth := []string{"Authorization", "Bearer ghs_installation"}
	do(context.Background(), t, cl, f, "POST", "/repos/o/r/code-scanning/sarifs", auth...)
	before := f.arrivals()
	out := do(context.Background(), t, cl, f, "GET", "/repos/o/r", auth...)
	t.Logf("core request after a spent code_scanning_upload quota: %d arrivals, reason %v", f.arrivals()-before, out.Reason)
	if f.arrivals()-before != 1 || out.Reason != nil {
		t.Fatalf("core request: %d arrivals, reason %v; want it sent and answered", f.arrivals()-before, out.Reason)
	}
}

// TestGitHubResourceFromMethodAndPath checks the rate limit resource of
// each kind of request, as go-github's GetRateLimitCategory names it.
func TestGitHubResourceFromMethodAndPath(t *testing.T) {
	f := newFake(t, reply{status: 200})
	lim := &recorder{}
	cl := atFake(t, f, []retrybudget.Route{presets.GitHub()}, func(cfg *retrybudget.Config) { cfg.Limiter = lim })
	cases := []struct{ method, path, resource string }{
		{"GET", "/repos/o/r", "core"},
		{"GET", "/search/issues", "search"},
		{"GET", "/search/code", "code_search"},
		{"POST", "/graphql", "graphql"},
		{"POST", "/app-manifests/abc/conversions", "integration_manifest"},
		{"PUT", "/repos/o/r/import", "source_import"},
		{"POST", "/repos/o/r/code-scanning/sarifs", "code_scanning_upload"},
		{"GET", "/scim/v2/organizations/o/Users", "scim"},
		{"POST", "/repos/o/r/dependency-graph/snapshots", "dependency_snapshots"},
		{"GET", "/repos/o/r/dependency-graph/sbom", "dependency_sbom"},
		{"GET", "/orgs/o/audit-log", "audit_log"},
		{"GET", "/repos/o/r/import", "core"},
	}
	for _, c := range cases {
		do(context.Background(), t, cl, f, c.method, c.path, "Authorization", "Bearer ghp_test")
	}
	boundaries, _ := lim.recorded()
	for i, c := range cases {
		if !strings.HasSuffix(boundaries[i], "|"+c.resource) || strings.Contains(boundaries[i], "ghp_test") {
			t.Errorf("%s %s: boundary %q; want resource %s and no raw token", c.method, c.path, boundaries[i], c.resource)
		}
	}
}

// TestGitHubBoundaryNamesTheInstallation sends requests under two tokens of
// one installation (an hourly renewal) with GitHubBoundary: they count
// against one boundary per resource, so a pause outlives the token.
func TestGitHubBoundaryNamesTheInstallation(t *testing.T) {
	f := newFake(t, reply{status: 200})
	lim := &recorder{}
	r := presets.GitHub()
	r.Config.Boundary = presets.GitHubBoundary("installation:42")
	cl := atFake(t, f, []retrybudget.Route{r}, func(cfg *retrybudget.Config) { cfg.Limiter = lim })
	for _, token := range []string{"ghs_first", "ghs_renewed"} {
		req, _ := http.NewRequest("GET", f.srv.URL+"/repos/o/r", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	b, _ := lim.recorded()
	if b[0] != b[1] || b[0] != "github:installation:42|core" {
		t.Fatalf("boundaries %q; want both github:installation:42|core", b)
	}
}
