package peers

import (
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	fsbudget "github.com/failsafe-go/failsafe-go/budget"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/budget"
)

// The retry schedule every contender gets, as far as its options allow: at
// most 4 attempts (3 retries), exponential backoff from 5ms capped at 20ms.
const (
	maxAttempts = 4
	baseDelay   = 5 * time.Millisecond
	maxDelay    = 20 * time.Millisecond
)

// contender is one way of sending requests: a library with a configuration.
type contender struct {
	name string
	// config says, for docs/benchmarks.md, how the library is set up.
	config string
	// rt returns a RoundTripper sending through base.
	rt func(base http.RoundTripper) http.RoundTripper
	// ctx prepares the context of one logical request numbered n; nil
	// leaves it alone.
	ctx func(ctx context.Context, n int) context.Context
	// header sets headers on one logical request numbered n; nil sets
	// none.
	header func(h http.Header, n int)
}

func bare() contender {
	return contender{
		name:   "bare",
		config: "no retries",
		rt:     func(base http.RoundTripper) http.RoundTripper { return base },
	}
}

func rbDefault() contender {
	return contender{
		name: "retrybudget",
		config: "`New(Config{MaxAttempts: 4, BaseDelay: 5ms, MaxDelay: 20ms})`; every other field at its default: " +
			"retry budget 10% of first attempts + 10 retries/s, jitter 0.5, MaxWait 60s; " +
			"a POST gets a generated Idempotency-Key, repeated only when it cannot have been applied (KeysHonoured false)",
		rt: func(base http.RoundTripper) http.RoundTripper {
			return retrybudget.New(rbConfig(base))
		},
	}
}

// rbConfig is the Config of the retrybudget contender, which the others
// ("as retrybudget with ...") change one field of.
func rbConfig(base http.RoundTripper) retrybudget.Config {
	return retrybudget.Config{Base: base, MaxAttempts: maxAttempts, BaseDelay: baseDelay, MaxDelay: maxDelay}
}

func rbAction() contender {
	c := rbDefault()
	c.name = "retrybudget + Action"
	c.config = "as retrybudget, each logical POST under `WithAction(ctx, Action{Tenant, \"charge\", orderID})`: " +
		"a stable key, so a maybe-applied attempt is repeated under it"
	c.ctx = func(ctx context.Context, n int) context.Context {
		return retrybudget.WithAction(ctx, retrybudget.Action{Tenant: "acme", Operation: "charge", Key: orderID(n)})
	}
	return c
}

func rbUnlimited() contender {
	return contender{
		name:   "retrybudget, budget off",
		config: "as retrybudget with `Budget: UnlimitedBudget{}`",
		rt: func(base http.RoundTripper) http.RoundTripper {
			cfg := rbConfig(base)
			cfg.Budget = budget.Unlimited{}
			return retrybudget.New(cfg)
		},
	}
}

func rbActionUnlimited() contender {
	c := rbAction()
	c.name = "retrybudget + Action, budget off"
	c.config = "as retrybudget + Action with `Budget: UnlimitedBudget{}`"
	c.rt = rbUnlimited().rt
	return c
}

func retryable() contender {
	return contender{
		name: "go-retryablehttp",
		config: "`NewClient()` with RetryMax 3, RetryWaitMin 5ms, RetryWaitMax 20ms, Logger nil (the default logs every request to stderr), " +
			"HTTPClient on the shared base; used as `&RoundTripper{Client: c}`; CheckRetry and Backoff are the defaults",
		rt: func(base http.RoundTripper) http.RoundTripper {
			c := retryablehttp.NewClient()
			c.HTTPClient = &http.Client{Transport: base}
			c.RetryMax = maxAttempts - 1
			c.RetryWaitMin, c.RetryWaitMax = baseDelay, maxDelay
			c.Logger = nil
			return &retryablehttp.RoundTripper{Client: c}
		},
	}
}

func retryableKeyed() contender {
	c := retryable()
	c.name = "go-retryablehttp + caller's key"
	c.config = "as go-retryablehttp, the caller setting `Idempotency-Key: <order id>` on each logical POST itself"
	c.header = func(h http.Header, n int) { h.Set("Idempotency-Key", orderID(n)) }
	return c
}

func failsafe() contender {
	return contender{
		name: "failsafehttp",
		config: "`NewRoundTripper(base, NewRetryPolicyBuilder().WithMaxRetries(3).WithBackoff(5ms, 20ms).Build())`; " +
			"the builder's default handling (retry errors, 429 and 5xx but 501; Retry-After seconds on 429/503)",
		rt: func(base http.RoundTripper) http.RoundTripper {
			return failsafehttp.NewRoundTripper(base, failsafehttp.NewRetryPolicyBuilder().
				WithMaxRetries(maxAttempts-1).WithBackoff(baseDelay, maxDelay).Build())
		},
	}
}

func failsafeBudget() contender {
	return contender{
		name:   "failsafehttp + budget",
		config: "as failsafehttp with `.WithBudget(budget.New())` (opt-in: concurrent retries at most 20% of executions, min 3)",
		rt: func(base http.RoundTripper) http.RoundTripper {
			return failsafehttp.NewRoundTripper(base, failsafehttp.NewRetryPolicyBuilder().
				WithMaxRetries(maxAttempts-1).WithBackoff(baseDelay, maxDelay).WithBudget(fsbudget.New()).Build())
		},
	}
}

// canned is a base RoundTripper without a network: it consumes the
// request body, as a transport must, and answers 200 with a short body at
// once. Through it, a benchmark measures a library's own cost per call.
type canned struct{}

func (canned) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, ContentLength: int64(len(okBody)),
		Body: io.NopCloser(strings.NewReader(okBody)), Request: req,
	}, nil
}

// okBody is the provider's answer on the success path.
const okBody = `{"id":"ch_1","status":"succeeded"}`

// newBase returns a fresh loopback transport, pooled enough for the
// scenarios' concurrency.
func newBase() *http.Transport {
	return &http.Transport{MaxIdleConns: 100, MaxIdleConnsPerHost: 100, IdleConnTimeout: 30 * time.Second}
}
