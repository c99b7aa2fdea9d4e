package presets_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/presets"
)

// TestOpenAIBillingStopIsNotRetried answers a chat completion with the 429
// OpenAI sends when the organization or project may not spend more, with
// the billing code in type or in code: waiting buys no credit, so it is
// sent once. A rate-limit 429 is still retried.
func TestOpenAIBillingStopIsNotRetried(t *testing.T) {
	codes := []string{"insufficient_quota", "credit_balance_exhausted", "organization_spend_limit_exceeded",
		"project_spend_limit_exceeded", "organization_usage_limit_exceeded"}
	type tc struct {
		name, body string
		arrivals   int
	}
	var cases []tc
	for _, code := range codes {
		cases = append(cases,
			tc{code + " in type", `{"error":{"message":"You exceeded your current quota.","type":"` + code + `","param":null,"code":null}}`, 1},
			tc{code + " in code", `{"error":{"message":"Limit reached.","type":"invalid_request_error","param":null,"code":"` + code + `"}}`, 1})
	}
	cases = append(cases, tc{"rate limit", `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, 3})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, reply{status: 429, header: []string{"Content-Type", "application/json"}, body: c.body})
			cl := atFake(t, f, []retrybudget.Route{presets.OpenAI()}, nil)
			out := do(context.Background(), t, cl, f, "POST", "/v1/chat/completions")
			t.Logf("%s: %d arrivals", c.name, f.arrivals())
			if f.arrivals() != c.arrivals {
				t.Fatalf("%d arrivals; want %d", f.arrivals(), c.arrivals)
			}
			if c.arrivals == 1 && (out.Class != retrybudget.ClassBusiness || !errors.Is(out.Reason, retrybudget.ErrRejected)) {
				t.Fatalf("class %v, reason %v; want business, rejected", out.Class, out.Reason)
			}
		})
	}
}

// TestOpenAIBoundaryIsTheProject checks the boundary of requests from two
// API keys: with the OpenAI-Project header, or with OpenAIProjectBoundary,
// both count against their project's limit on the endpoint; without either,
// each key has its own.
func TestOpenAIBoundaryIsTheProject(t *testing.T) {
	f := newFake(t, reply{status: 200})
	send := func(route retrybudget.Route, key, project, path string) string {
		lim := &recorder{}
		cl := atFake(t, f, []retrybudget.Route{route}, func(cfg *retrybudget.Config) { cfg.Limiter = lim })
		req, _ := http.NewRequest("POST", f.srv.URL+path, strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+key)
		if project != "" {
			req.Header.Set("OpenAI-Project", project)
		}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		b, _ := lim.recorded()
		return b[0]
	}
	const chat = "/v1/chat/completions"
	if a, b := send(presets.OpenAI(), "sk-a", "proj_1", chat), send(presets.OpenAI(), "sk-b", "proj_1", chat); a != b {
		t.Errorf("two keys of project proj_1 (header): boundaries %q and %q; want one", a, b)
	}
	if a, b := send(presets.OpenAI(), "sk-a", "proj_1", chat), send(presets.OpenAI(), "sk-a", "proj_2", chat); a == b {
		t.Errorf("one key, two projects: one boundary %q; want two", a)
	}
	if a, b := send(presets.OpenAI(), "sk-a", "", chat), send(presets.OpenAI(), "sk-b", "", chat); a == b {
		t.Errorf("two keys without a project: one boundary %q; want one per key", a)
	}
	named := presets.OpenAI()
	named.Config.Boundary = presets.OpenAIProjectBoundary("proj_1")
	if a, b := send(named, "sk-proj-a", "", chat), send(named, "sk-proj-b", "", chat); a != b || strings.Contains(a, "sk-") {
		t.Errorf("OpenAIProjectBoundary: boundaries %q and %q; want one, without the key", a, b)
	}
	if a, b := send(named, "sk-a", "", chat), send(named, "sk-a", "", "/v1/embeddings"); a == b {
		t.Errorf("two endpoints: one boundary %q; want one per endpoint", a)
	}
}
