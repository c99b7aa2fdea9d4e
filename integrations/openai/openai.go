// Package openai builds an openai-go (github.com/openai/openai-go/v3)
// client on a retrybudget Transport, with openai-go's own retries off so
// that the Transport alone decides what is repeated. It is a module of its
// own, so a program that uses it compiles openai-go and no other SDK.
// Beside openai-go, import it under a name of your own:
//
//	import rbopenai "github.com/retrybudget/retrybudget/integrations/openai"
//
//	tr := retrybudget.New(retrybudget.Config{Routes: []retrybudget.Route{presets.OpenAI()}})
//	c := rbopenai.NewClient(key, "https://api.openai.com/v1/", tr)
//
//snippet:needs stripe, sdk
package openai

import (
	"net/http"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// NewClient returns an openai-go client for key that sends through rt to
// baseURL ("https://api.openai.com/v1/" in production) with openai-go's
// retries off (its default is 2). opts are applied after, and may
// override, these.
func NewClient(key, baseURL string, rt http.RoundTripper, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{
		option.WithAPIKey(key),
		option.WithBaseURL(baseURL),
		option.WithHTTPClient(&http.Client{Transport: rt}),
		option.WithMaxRetries(0),
	}, opts...)...)
}
