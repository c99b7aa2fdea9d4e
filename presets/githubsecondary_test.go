package presets_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/limiter"
	"github.com/retrybudget/retrybudget/presets"
)

// GitHub's answers, as "Rate limits for the REST API" documents them (read
// 2026-12-03,
// https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api):
// a secondary limit ("This limit is shared across the REST API and GraphQL
// API") is a 403 or 429 whose message says a secondary rate limit was
// exceeded, with retry-after or, without it, a wait of at least one
// minute; a primary limit is a 403 or 429 with x-ratelimit-remaining: 0
// until x-ratelimit-reset, for the resource in x-ratelimit-resource.
var (
	githubSecondary403 = reply{status: 403, header: []string{"Content-Type", "application/json; charset=utf-8",
		"x-ratelimit-remaining", "4990", "x-ratelimit-resource", "core"},
		body: `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits","status":"403"}`}
	githubSecondaryRetryAfter = reply{status: 429, header: []string{"retry-after", "30",
		"x-ratelimit-remaining", "4990", "x-ratelimit-resource", "core"}}
)

// githubPrimary returns a primary limit answer for resource, spent until
// twenty minutes from now.
func githubPrimary(resource string) reply {
	reset, _ := epochIn(20 * time.Minute)
	return reply{status: 403, header: []string{"Content-Type", "application/json; charset=utf-8",
		"x-ratelimit-limit", "30", "x-ratelimit-remaining", "0", "x-ratelimit-reset", reset, "x-ratelimit-resource", resource},
		body: `{"message":"API rate limit exceeded for installation ID 1.","documentation_url":"https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"}`}
}

// githubLimiters are the limiters the GitHub pause rules are checked with:
// each returns the limiters of two processes sharing one fleet (the same
// Local twice: one process).
var githubLimiters = []struct {
	name string
	new  func(t *testing.T) (first, second limiter.Limiter)
}{
	{"local", func(t *testing.T) (limiter.Limiter, limiter.Limiter) {
		l, err := limiter.NewLocal(limiter.LocalConfig{})
		if err != nil {
			t.Fatal(err)
		}
		return l, l
	}},
	{"redis, two processes", func(t *testing.T) (limiter.Limiter, limiter.Limiter) {
		rdb, prefix := redistest.Client(t), redistest.Prefix(t)
		cfg := limiter.RedisConfig{Prefix: prefix, BoundaryKey: redistest.BoundaryKey(), Timeout: 2 * time.Second}
		first, err := limiter.NewRedis(rdb, cfg)
		if err != nil {
			t.Fatal(err)
		}
		// Another process: its own connection pool to the same Redis.
		o := rdb.Options()
		rdb2 := redis.NewClient(&redis.Options{Addr: o.Addr, Username: o.Username, Password: o.Password, DB: o.DB})
		t.Cleanup(func() { _ = rdb2.Close() })
		other, err := limiter.NewRedis(rdb2, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return first, other
	}},
}

// TestGitHubSecondaryLimitPausesTheCredential: a secondary limit met by a
// core request pauses the credential's graphql and search requests too,
// in this process and in another one sharing the limiter (no arrival at
// GitHub during the pause), and leaves another credential running.
func TestGitHubSecondaryLimitPausesTheCredential(t *testing.T) {
	for _, lim := range githubLimiters {
		for _, answer := range []struct {
			name  string
			reply reply
		}{
			{"403 naming the secondary limit", githubSecondary403},
			{"429 with retry-after", githubSecondaryRetryAfter},
		} {
			t.Run(lim.name+"/"+answer.name, func(t *testing.T) {
				f := newFake(t, answer.reply, reply{status: 200, body: `{}`})
				first, second := lim.new(t)
				here := atFake(t, f, []retrybudget.Route{presets.GitHub()}, func(cfg *retrybudget.Config) { cfg.Limiter = first })
				there := atFake(t, f, []retrybudget.Route{presets.GitHub()}, func(cfg *retrybudget.Config) { cfg.Limiter = second })
				tokenA := []string{"Authorization", "Bearer ghs_first"}
				tokenB := []string{"Authorization", "Bearer ghs_second"}
				ctx := context.Background()

				if out := do(ctx, t, here, f, "GET", "/repos/o/r", tokenA...); out.Class != retrybudget.ClassCapacity {
					t.Fatalf("core request: class %v, reason %v; want the secondary limit's capacity answer", out.Class, out.Reason)
				}
				before := f.arrivals()
				for _, c := range []struct {
					client *http.Client
					method string
					path   string
				}{
					{here, "POST", "/graphql"},
					{here, "GET", "/search/issues"},
					{there, "POST", "/graphql"},
					{there, "GET", "/search/issues"},
					{there, "GET", "/repos/o/r"},
				} {
					out := do(ctx, t, c.client, f, c.method, c.path, tokenA...)
					if !errors.Is(out.Reason, retrybudget.ErrRateLimited) || out.RetryAt.IsZero() {
						t.Errorf("%s %s during the pause: reason %v, RetryAt %v; want ErrRateLimited with RetryAt", c.method, c.path, out.Reason, out.RetryAt)
					}
				}
				paused := f.arrivals() - before
				before = f.arrivals()
				out := do(ctx, t, there, f, "POST", "/graphql", tokenB...)
				other := f.arrivals() - before
				t.Logf("after a secondary limit on core: %d arrivals of the credential's graphql, search and core requests; another credential's graphql: %d", paused, other)
				if paused != 0 {
					t.Fatalf("%d requests of the paused credential reached GitHub; want 0", paused)
				}
				if other != 1 || out.Reason != nil {
					t.Fatalf("another credential's request: %d arrivals, reason %v; want it sent and answered", other, out.Reason)
				}
			})
		}
	}
}

// TestGitHubPrimaryLimitPausesItsResourceOnly: a spent search quota pauses
// the credential's search requests and no others.
func TestGitHubPrimaryLimitPausesItsResourceOnly(t *testing.T) {
	for _, lim := range githubLimiters {
		t.Run(lim.name, func(t *testing.T) {
			f := newFake(t, githubPrimary("search"), reply{status: 200, body: `{}`})
			first, second := lim.new(t)
			here := atFake(t, f, []retrybudget.Route{presets.GitHub()}, func(cfg *retrybudget.Config) { cfg.Limiter = first })
			there := atFake(t, f, []retrybudget.Route{presets.GitHub()}, func(cfg *retrybudget.Config) { cfg.Limiter = second })
			token := []string{"Authorization", "Bearer ghs_first"}
			ctx := context.Background()
			if out := do(ctx, t, here, f, "GET", "/search/issues", token...); !errors.Is(out.Reason, retrybudget.ErrWaitTooLong) {
				t.Fatalf("search request: reason %v; want ErrWaitTooLong for the reset", out.Reason)
			}
			before := f.arrivals()
			for _, path := range []string{"/repos/o/r", "/graphql"} {
				method := "GET"
				if path == "/graphql" {
					method = "POST"
				}
				if out := do(ctx, t, there, f, method, path, token...); out.Reason != nil {
					t.Errorf("%s after the search quota was spent: reason %v; want it answered", path, out.Reason)
				}
			}
			running := f.arrivals() - before
			before = f.arrivals()
			out := do(ctx, t, there, f, "GET", "/search/issues", token...)
			paused := f.arrivals() - before
			t.Logf("after a spent search quota: core and graphql %d arrivals, search %d", running, paused)
			if running != 2 || paused != 0 || !errors.Is(out.Reason, retrybudget.ErrRateLimited) {
				t.Fatalf("core and graphql: %d arrivals, want 2; search: %d arrivals, reason %v, want 0 and ErrRateLimited", running, paused, out.Reason)
			}
		})
	}
}
