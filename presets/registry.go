package presets

import (
	"strings"

	"github.com/retrybudget/retrybudget"
)

// preset is one entry of the registry.
type preset struct {
	name  string
	route func() retrybudget.Route
}

// registry returns the presets in name order. It builds the list on each
// call so that the package holds no state.
func registry() []preset {
	return []preset{
		{"github", GitHub},
		{"openai", OpenAI},
		{"paypal", PayPal},
		{"shopify", Shopify},
		{"slack", Slack},
		{"stripe", Stripe},
		{"twilio", Twilio},
	}
}

// Names returns the names ByName accepts, sorted.
func Names() []string {
	ps := registry()
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.name
	}
	return names
}

// ByName returns a fresh copy of the preset called name, compared
// case-insensitively after trimming spaces ("stripe", " GitHub "). ok is
// false for an unknown name.
func ByName(name string) (r retrybudget.Route, ok bool) {
	name = strings.ToLower(strings.TrimSpace(name))
	for _, p := range registry() {
		if p.name == name {
			return p.route(), true
		}
	}
	return retrybudget.Route{}, false
}
