package presets_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/presets"
)

func TestNamesAndByName(t *testing.T) {
	names := presets.Names()
	want := []string{"github", "openai", "paypal", "shopify", "slack", "stripe", "twilio"}
	if !slices.Equal(names, want) {
		t.Fatalf("Names() = %v; want %v", names, want)
	}
	for _, name := range names {
		r, ok := presets.ByName(name)
		if !ok || r.Host == "" || r.Config.Boundary == nil || r.Config.MaxAttempts < 2 || r.Config.BaseDelay <= 0 {
			t.Errorf("ByName(%q) = %+v, %v; want a complete route", name, r, ok)
		}
	}
	if r, ok := presets.ByName("  Stripe "); !ok || r.Host != "api.stripe.com" {
		t.Errorf("ByName is not case- and space-insensitive: %q, %v", r.Host, ok)
	}
	if _, ok := presets.ByName("stripe-live"); ok {
		t.Error("ByName accepted an unknown name")
	}
}

func TestPresetsAreFreshCopies(t *testing.T) {
	a, _ := presets.ByName("stripe")
	a.Host, a.Config.MaxAttempts = "changed", 99
	if b := presets.Stripe(); b.Host != "api.stripe.com" || b.Config.MaxAttempts != 3 {
		t.Fatalf("a change to one copy leaked into the next: %+v", b)
	}
}

func TestKeyPolicies(t *testing.T) {
	tests := []struct {
		route    retrybudget.Route
		header   string
		honoured bool
	}{
		{presets.Stripe(), "Idempotency-Key", true},
		{presets.PayPal(), "PayPal-Request-Id", true},
		{presets.GitHub(), "", false},
		{presets.Slack(), "", false},
		{presets.Twilio(), "", false},
		{presets.Shopify(), "", false},
		{presets.OpenAI(), "", false},
	}
	for _, tt := range tests {
		if tt.route.Config.KeyHeader != tt.header || tt.route.Config.KeysHonoured != tt.honoured {
			t.Errorf("%s: key header %q honoured %v; want %q, %v", tt.route.Host,
				tt.route.Config.KeyHeader, tt.route.Config.KeysHonoured, tt.header, tt.honoured)
		}
	}
}

func TestTwilioClassifierHintsRetry(t *testing.T) {
	cls := presets.Twilio().Config.Classifier.Classify(&retrybudget.AttemptResult{
		Response: &http.Response{StatusCode: 429, Header: http.Header{}, Body: http.NoBody},
		Now:      time.Now(),
	})
	if cls.Class != retrybudget.ClassCapacity || cls.Hint != retrybudget.HintRetry {
		t.Fatalf("Classify(429) = %+v; want capacity with HintRetry", cls)
	}
}
