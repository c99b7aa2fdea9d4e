package rateheader_test

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/rateheader"
)

func ExampleParseIETF() {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	h := http.Header{}
	h.Set("RateLimit-Policy", `"permin";q=50;w=60, "perhr";q=1000;w=3600`)
	h.Set("RateLimit", `"permin";r=0;t=20, "perhr";r=950;t=1800`)
	for _, q := range rateheader.ParseIETF(h, now) {
		fmt.Printf("%s: %d of %d left per %v, resets in %v", q.Policy, q.Remaining, q.Limit, q.Window, q.Reset.Sub(now))
		if until, ok := q.PauseUntil(now); ok {
			fmt.Printf(", pause until %s", until.Format(time.TimeOnly))
		}
		fmt.Println()
	}
	// Output:
	// permin: 0 of 50 left per 1m0s, resets in 20s, pause until 10:00:20
	// perhr: 950 of 1000 left per 1h0m0s, resets in 30m0s
}

func ExampleXRateLimit_Parse() {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	github := http.Header{}
	github.Set("x-ratelimit-remaining", "0")
	github.Set("x-ratelimit-reset", fmt.Sprint(now.Add(15*time.Minute).Unix()))
	q, ok := rateheader.XRateLimit{Mode: rateheader.ResetEpoch}.Parse(github, now)
	fmt.Println(ok, q.Remaining, q.Reset.Sub(now))

	openai := http.Header{}
	openai.Set("x-ratelimit-remaining-tokens", "0")
	openai.Set("x-ratelimit-reset-tokens", "6m0s")
	q, ok = rateheader.XRateLimit{Suffix: "-Tokens", Mode: rateheader.ResetDuration}.Parse(openai, now)
	fmt.Println(ok, q.Remaining, q.Reset.Sub(now))

	azure := http.Header{}
	azure.Set("x-ratelimit-remaining-tokens", "-1")
	_, ok = rateheader.XRateLimit{Suffix: "-Tokens"}.Parse(azure, now)
	fmt.Println(ok)
	// Output:
	// true 0 15m0s
	// true 0 6m0s
	// false
}

func ExampleParseRetryAfterMs() {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for _, v := range []string{"250", "1500.5", "-1", "86400001"} {
		h := http.Header{"Retry-After-Ms": {v}}
		if at, ok := rateheader.ParseRetryAfterMs(h, now); ok {
			fmt.Printf("%s: wait %v\n", v, at.Sub(now))
		} else {
			fmt.Printf("%s: ignored\n", v)
		}
	}
	// Output:
	// 250: wait 250ms
	// 1500.5: wait 1.5005s
	// -1: ignored
	// 86400001: ignored
}

func ExampleParseRetryAfter() {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for _, v := range []string{"120", "Wed, 02 Dec 2026 10:05:00 GMT", "Wednesday, 02-Dec-26 10:05:00 GMT",
		"Wed Dec  2 10:05:00 2026", "2.0", "-1", "soon"} {
		at, ok := rateheader.ParseRetryAfter(http.Header{"Retry-After": {v}}, now)
		if !ok {
			fmt.Printf("%q: ignored\n", v)
			continue
		}
		fmt.Printf("%q: wait %v\n", v, at.Sub(now))
	}
	// Output:
	// "120": wait 2m0s
	// "Wed, 02 Dec 2026 10:05:00 GMT": wait 5m0s
	// "Wednesday, 02-Dec-26 10:05:00 GMT": wait 5m0s
	// "Wed Dec  2 10:05:00 2026": wait 5m0s
	// "2.0": wait 2s
	// "-1": ignored
	// "soon": ignored
}

// fakeProvider answers every request with a success that spends the quota.
type fakeProvider struct{}

func (fakeProvider) RoundTrip(req *http.Request) (*http.Response, error) {
	h := http.Header{}
	h.Set("RateLimit", `"default";r=0;t=30`)
	return &http.Response{StatusCode: 200, Header: h, Body: http.NoBody, Request: req}, nil
}

func ExampleClassifier() {
	var paused []string
	client := &http.Client{Transport: retrybudget.New(retrybudget.Config{
		Base:       fakeProvider{},
		Classifier: rateheader.Classifier{},
		Observer: retrybudget.Observer{Cooldown: func(e retrybudget.LimitEvent) {
			paused = append(paused, e.Boundary)
		}},
		// A Limiter is needed for the pause to reach the fleet; without
		// one the Transport skips cooldowns. Any limiter.Limiter works.
		Limiter: noLimit{},
	})}
	resp, err := client.Get("https://api.example.com/v1/things")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, strings.Join(paused, ","))
	// Output:
	// 200 api.example.com
}
