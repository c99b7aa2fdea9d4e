package presets

import (
	"testing"
	"time"
)

func TestParseCallLimit(t *testing.T) {
	tests := []struct {
		v          string
		used, size int64
		ok         bool
	}{
		{"39/40", 39, 40, true},
		{" 40 / 40 ", 40, 40, true},
		{"0/400", 0, 400, true},
		{"1000000/1000000", 1000000, 1000000, true},
		{"1000001/40", 0, 0, false},
		{"40/0", 0, 0, false},
		{"-1/40", 0, 0, false},
		{"+1/40", 0, 0, false},
		{"1.0/40", 0, 0, false},
		{"40", 0, 0, false},
		{"40/40/40", 0, 0, false},
		{"/40", 0, 0, false},
		{"", 0, 0, false},
		{"99999999999999999999/40", 0, 0, false},
	}
	for _, tt := range tests {
		used, size, ok := parseCallLimit(tt.v)
		if used != tt.used || size != tt.size || ok != tt.ok {
			t.Errorf("parseCallLimit(%q) = %d, %d, %v; want %d, %d, %v", tt.v, used, size, ok, tt.used, tt.size, tt.ok)
		}
	}
}

// FuzzShopifyCallLimit checks that parseCallLimit never panics, keeps both
// numbers within bounds, and so keeps the pause it leads to bounded.
func FuzzShopifyCallLimit(f *testing.F) {
	for _, seed := range []string{"39/40", "40/40", "1000000/1", "0/0", "-1/40", "a/b", "/", "9223372036854775807/1"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		used, size, ok := parseCallLimit(v)
		if !ok {
			return
		}
		if used < 0 || used > maxCallLimit || size <= 0 || size > maxCallLimit {
			t.Fatalf("%q: used %d size %d out of bounds", v, used, size)
		}
		if used >= size {
			if d := drainTime(used - size + 1); d <= 0 || d > time.Duration(maxCallLimit)*time.Second {
				t.Fatalf("%q: pause %v out of bounds", v, d)
			}
		}
	})
}
