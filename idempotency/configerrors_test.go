package idempotency

import (
	"errors"
	"strings"
	"testing"
)

// TestConfigErrorsSayWhatToSet checks that CredentialTenant refuses a bad
// secret or no header names with ErrInvalidConfig and a message naming the
// argument and a value that works.
func TestConfigErrorsSayWhatToSet(t *testing.T) {
	for _, tt := range []struct {
		name    string
		secret  []byte
		headers []string
		words   []string
	}{
		{"short secret", []byte("short"), []string{"X-Api-Key"}, []string{"CredentialTenant", "secret is 5 bytes", "32 random bytes", "at least 16"}},
		{"no headers", make([]byte, 32), nil, []string{"CredentialTenant", "header names", `"X-Api-Key", "Authorization"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CredentialTenant(tt.secret, tt.headers...)
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error %v; want it to wrap ErrInvalidConfig", err)
			}
			for _, w := range tt.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
}
