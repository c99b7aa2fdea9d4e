package console

import (
	"errors"
	"strings"
	"testing"

	"github.com/retrybudget/retrybudget/ledger"
)

// TestConfigErrorsSayWhatToSet checks that New refuses a Config missing a
// required field with ErrConfig and a message naming the field as the
// caller writes it, the environment variable the docs keep the token in,
// and a value that works.
func TestConfigErrorsSayWhatToSet(t *testing.T) {
	store := ledger.NewMemory(ledger.MemoryConfig{})
	for _, tt := range []struct {
		name  string
		cfg   Config
		words []string
	}{
		{"no store", Config{Token: "t"}, []string{"console.Config.Store", "the service's ledger store"}},
		{"no token", Config{Store: store}, []string{"console.Config.Token", "console.Config.Authenticate", "RETRYBUDGET_CONSOLE_TOKEN", "openssl rand -base64 32"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error %v; want it to wrap ErrConfig", err)
			}
			for _, w := range tt.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
}
