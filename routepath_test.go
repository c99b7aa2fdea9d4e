package retrybudget

import "testing"

func TestPathHasPrefixMatchesSegmentWildcards(t *testing.T) {
	for _, c := range []struct {
		path, prefix string
		want         bool
	}{
		{"/v2/checkout/orders", "/v2/checkout/orders", true},
		{"/v2/checkout/orders/ABC/capture", "/v2/checkout/orders", true},
		{"/v2/checkout/orders/ABC/capture", "/v2/checkout/orders/{id}/capture", true},
		{"/v2/checkout/orders/ABC/capture/x", "/v2/checkout/orders/{id}/capture", true},
		{"/v2/checkout/orders/ABC/confirm-payment-source", "/v2/checkout/orders/{id}/capture", false},
		{"/v2/checkout/orders//capture", "/v2/checkout/orders/{id}/capture", false},
		{"/v2/checkout/orders/ABC", "/v2/checkout/orders/{id}", true},
		{"/v2/checkout/orders/", "/v2/checkout/orders/{id}", false},
		{"/v1/billing/subscriptions/I-1/cancel", "/v1/billing/subscriptions/{id}/cancel", true},
		{"/a/{x", "/a/{x", true},     // no closing brace: literal
		{"/a/b", "/a/{x", false},     // literal
		{"/a/{x}y", "/a/{x}y", true}, // not a whole segment: literal
		{"/a/zy", "/a/{x}y", false},
		{"/a/b/c/d", "/a/{x}/c/{y}", true},
		{"/a/b/c", "/a/{x}/c/{y}", false},
		{"/base/v2/x/1/y", "/base/v2/x/{id}/y", true},
	} {
		if got := pathHasPrefix(c.path, c.prefix); got != c.want {
			t.Errorf("pathHasPrefix(%q, %q) = %v; want %v", c.path, c.prefix, got, c.want)
		}
	}
}

func FuzzPathHasPrefix(f *testing.F) {
	f.Add("/v2/checkout/orders/ABC/capture", "/v2/checkout/orders/{id}/capture")
	f.Add("/a/b", "/a/{")
	f.Fuzz(func(t *testing.T, path, prefix string) {
		got := pathHasPrefix(path, prefix)
		if !containsBraces(prefix) && got != (len(path) >= len(prefix) && path[:len(prefix)] == prefix) {
			t.Fatalf("pathHasPrefix(%q, %q) = %v without a wildcard", path, prefix, got)
		}
	})
}

func containsBraces(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '/' && s[i+1] == '{' {
			return true
		}
	}
	return false
}
