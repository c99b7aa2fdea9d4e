package budget

import (
	"regexp"
	"strings"
	"testing"
)

// A key is the prefix and a hash tag of 128 bits of hex, whatever the
// destination holds: braces cannot break the tag and a credential in a
// custom destination never reaches Redis.
func TestDestKey(t *testing.T) {
	shape := regexp.MustCompile(`^p:\{[0-9a-f]{32}\}$`)
	seen := map[string]string{}
	for _, dest := range []string{"", "api.example.com", "api.example.com#sk_live_s3cret", "{x}", "a}b{c"} {
		k := destKey("p:", dest)
		if !shape.MatchString(k) {
			t.Errorf("destKey(%q) = %q; want p:{<32 hex>}", dest, k)
		}
		if dest != "" && strings.Contains(k, dest) {
			t.Errorf("destKey(%q) = %q holds the destination", dest, k)
		}
		if other, dup := seen[k]; dup {
			t.Errorf("destinations %q and %q share key %q", dest, other, k)
		}
		seen[k] = dest
		if destKey("p:", dest) != k {
			t.Errorf("destKey(%q) is not stable", dest)
		}
	}
}
