package limiter

import (
	"errors"
	"strings"
	"testing"
)

// TestBoundaryKeyErrorsSayWhatToSet: a missing or short BoundaryKey fails
// with the package's sentinel and a message that names the field, the
// environment variable the docs keep it in, and what a good value looks
// like.
func TestBoundaryKeyErrorsSayWhatToSet(t *testing.T) {
	for _, tt := range []struct {
		name  string
		key   []byte
		is    error
		words []string
	}{
		{"missing", nil, ErrNoBoundaryKey, []string{"BoundaryKey", "RETRYBUDGET_BOUNDARY_KEY", "32 random bytes"}},
		{"short", []byte("short"), ErrInvalidConfig, []string{"BoundaryKey is 5 bytes", "RETRYBUDGET_BOUNDARY_KEY", "32 random bytes"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newKeyspace("p:", tt.key)
			if !errors.Is(err, tt.is) {
				t.Fatalf("error %v; want it to wrap %v", err, tt.is)
			}
			for _, w := range tt.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
}
