package budget

import (
	"errors"
	"strings"
	"testing"

	"github.com/retrybudget/retrybudget/internal/redistest"
)

// TestDestinationKeyErrorsSayWhatToSet: a missing or short DestinationKey
// fails with the package's sentinel and a message that names the field,
// the environment variable the docs keep it in, and what a good value
// looks like.
func TestDestinationKeyErrorsSayWhatToSet(t *testing.T) {
	rdb := redistest.Client(t)
	for _, tt := range []struct {
		name  string
		key   []byte
		is    error
		words []string
	}{
		{"missing", nil, ErrNoDestinationKey, []string{"DestinationKey", "RETRYBUDGET_DESTINATION_KEY", "32 random bytes"}},
		{"short", []byte("short"), ErrInvalidConfig, []string{"DestinationKey is 5 bytes", "RETRYBUDGET_DESTINATION_KEY", "32 random bytes"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewRedis(rdb, RedisConfig{DestinationKey: tt.key})
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
