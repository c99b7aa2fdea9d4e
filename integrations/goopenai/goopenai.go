// Package goopenai builds a go-openai (github.com/sashabaranov/go-openai)
// client on a retrybudget Transport. go-openai makes no retries of its
// own, so the Transport alone decides what is repeated. It is a module of
// its own, so a program that uses it compiles go-openai and no other SDK.
//
//	tr := retrybudget.New(retrybudget.Config{Routes: []retrybudget.Route{presets.OpenAI()}})
//	c := goopenai.NewClient(key, "https://api.openai.com/v1", tr)
//
//snippet:needs stripe, sdk
package goopenai

import (
	"net/http"

	openai "github.com/sashabaranov/go-openai"
)

// NewClient returns a go-openai (sashabaranov) client for key that sends
// through rt to baseURL ("https://api.openai.com/v1" in production).
func NewClient(key, baseURL string, rt http.RoundTripper) *openai.Client {
	cfg := openai.DefaultConfig(key)
	cfg.BaseURL = baseURL
	cfg.HTTPClient = &http.Client{Transport: rt}
	return openai.NewClientWithConfig(cfg)
}
