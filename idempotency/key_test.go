package idempotency_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/retrybudget/retrybudget/idempotency"
)

func TestParseKey(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		max    int
		want   string // "" means ErrMalformedKey
	}{
		{"sf-string", []string{`"8e03978e-40d5-43e8"`}, 0, "8e03978e-40d5-43e8"},
		{"bare token", []string{"tenant_a:campaign_19:revision_4"}, 0, "tenant_a:campaign_19:revision_4"},
		{"bare UUID starting with a digit", []string{"550e8400-e29b-41d4-a716-446655440000"}, 0, "550e8400-e29b-41d4-a716-446655440000"},
		{"bare with tchar and slash", []string{"*a!#$%&'+-.^_`|~/:9"}, 0, "*a!#$%&'+-.^_`|~/:9"},
		{"string with space and escapes", []string{`"a b\"c\\d"`}, 0, `a b"c\d`},
		{"surrounding whitespace", []string{" \t\"k\" \t"}, 0, "k"},
		{"exactly max", []string{"abcd"}, 4, "abcd"},
		{"over max", []string{"abcde"}, 4, ""},
		{"quoted over max", []string{`"abcde"`}, 4, ""},
		{"escaped within max", []string{`"\\\\\\\\"`}, 4, `\\\\`},
		{"no values", nil, 0, ""},
		{"two lines", []string{"a", "b"}, 0, ""},
		{"list", []string{"a, b"}, 0, ""},
		{"quoted list", []string{`"a", "b"`}, 0, ""},
		{"empty", []string{""}, 0, ""},
		{"empty string", []string{`""`}, 0, ""},
		{"unterminated", []string{`"abc`}, 0, ""},
		{"unterminated escape", []string{`"abc\`}, 0, ""},
		{"bad escape", []string{`"a\nb"`}, 0, ""},
		{"control char", []string{"\"a\x01b\""}, 0, ""},
		{"non-ASCII", []string{`"café"`}, 0, ""},
		{"non-ASCII bare", []string{"café"}, 0, ""},
		{"parameters", []string{`"k";v=1`}, 0, ""},
		{"bare parameters", []string{`k;v`}, 0, ""},
		{"space inside bare", []string{"a b"}, 0, ""},
		{"trailing garbage", []string{`"a"b`}, 0, ""},
		{"byte sequence with padding", []string{":aGVsbG8=:"}, 0, ""},
		{"colons are key characters", []string{":aGVsbG8:"}, 0, ":aGVsbG8:"},
		{"equals sign", []string{"a=b"}, 0, ""},
		{"huge input", []string{strings.Repeat(`\"`, 1000)}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := idempotency.ParseKey(tt.values, tt.max)
			if tt.want == "" {
				if !errors.Is(err, idempotency.ErrMalformedKey) || got != "" {
					t.Fatalf("ParseKey(%q) = %q, %v; want ErrMalformedKey", tt.values, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseKey(%q) = %q, %v; want %q", tt.values, got, err, tt.want)
			}
		})
	}
}

// FuzzParseKey checks that ParseKey never panics, that an accepted key is
// non-empty, within bounds and visible ASCII, and that quoting it as an RFC
// 9651 String parses back to the same key.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{`"k"`, "k", `"a\"b"`, `"`, `"\`, "a;b", "tenant_a:campaign_19:revision_4", "", " ", `"a"  ;`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		k, err := idempotency.ParseKey([]string{v}, 32)
		if err != nil {
			if !errors.Is(err, idempotency.ErrMalformedKey) {
				t.Fatalf("error %v is not ErrMalformedKey", err)
			}
			return
		}
		if k == "" || len(k) > 32 {
			t.Fatalf("key %q: empty or too long", k)
		}
		for i := 0; i < len(k); i++ {
			if k[i] < 0x20 || k[i] > 0x7e {
				t.Fatalf("key %q has byte %#x", k, k[i])
			}
		}
		quoted := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(k) + `"`
		if back, err := idempotency.ParseKey([]string{quoted}, 32); err != nil || back != k {
			t.Fatalf("quoted %s parses to %q, %v; want %q", quoted, back, err, k)
		}
	})
}
