package integrations

import (
	"net/http"

	goopenai "github.com/sashabaranov/go-openai"
)

// GoOpenAI returns a go-openai (sashabaranov) client for key that sends
// through rt to baseURL ("https://api.openai.com/v1" in production).
// go-openai makes no retries of its own.
func GoOpenAI(key, baseURL string, rt http.RoundTripper) *goopenai.Client {
	cfg := goopenai.DefaultConfig(key)
	cfg.BaseURL = baseURL
	cfg.HTTPClient = &http.Client{Transport: rt}
	return goopenai.NewClientWithConfig(cfg)
}
