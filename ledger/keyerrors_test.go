package ledger

import (
	"errors"
	"strings"
	"testing"
)

// TestKeyErrorsSayWhatToSet: a missing, empty or short fingerprint key and
// a bad encryption key fail with the package's sentinel and a message that
// names the field, the environment variable the docs keep it in, and what
// a good value looks like.
func TestKeyErrorsSayWhatToSet(t *testing.T) {
	for _, tt := range []struct {
		name  string
		err   error
		is    error
		words []string
	}{
		{"no fingerprint key", FingerprintKeys(nil).Validate(), ErrNoFingerprintKey,
			[]string{"FingerprintKeys", "RETRYBUDGET_FINGERPRINT_KEY", "32 random bytes"}},
		{"empty fingerprint key", FingerprintKeys{nil}.Validate(), ErrInvalidConfig,
			[]string{"FingerprintKeys[0] is empty", "RETRYBUDGET_FINGERPRINT_KEY", "32 random bytes"}},
		{"short old fingerprint key", FingerprintKeys{make([]byte, 32), []byte("short")}.Validate(), ErrInvalidConfig,
			[]string{"FingerprintKeys[1] is 5 bytes", "32 random bytes"}},
		{"bad encryption key", EncryptionKeys{make([]byte, 7)}.Validate(), ErrInvalidConfig,
			[]string{"EncryptionKeys[0] is 7 bytes", "RETRYBUDGET_ENCRYPTION_KEYS", "32 random bytes"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, tt.is) {
				t.Fatalf("error %v; want it to wrap %v", tt.err, tt.is)
			}
			for _, w := range tt.words {
				if !strings.Contains(tt.err.Error(), w) {
					t.Errorf("%q does not say %q", tt.err, w)
				}
			}
		})
	}
}
