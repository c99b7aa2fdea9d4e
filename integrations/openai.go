package integrations

import (
	"net/http"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// OpenAI returns an openai-go client for key that sends through rt to
// baseURL ("https://api.openai.com/v1/" in production) with openai-go's
// retries off (its default is 2). opts are applied after, and may
// override, these.
func OpenAI(key, baseURL string, rt http.RoundTripper, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{
		option.WithAPIKey(key),
		option.WithBaseURL(baseURL),
		option.WithHTTPClient(&http.Client{Transport: rt}),
		option.WithMaxRetries(0),
	}, opts...)...)
}
