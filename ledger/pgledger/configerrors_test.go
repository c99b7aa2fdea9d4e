package pgledger_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger"
)

// TestConfigErrorsSayWhatToSet checks that New refuses a bad Config with
// ledger.ErrInvalidConfig and a message naming the field as the caller
// writes it and a value that works. New validates before it touches the
// database, so none is needed.
func TestConfigErrorsSayWhatToSet(t *testing.T) {
	keys := ledger.FingerprintKeys{make([]byte, 32)}
	for _, tt := range []struct {
		name  string
		cfg   pgledger.Config
		words []string
	}{
		{"long table", pgledger.Config{Table: strings.Repeat("t", 64)}, []string{"pgledger.Config.Table", `such as "retrybudget_ledger"`}},
		{"table with dash", pgledger.Config{Table: "my-ledger"}, []string{"pgledger.Config.Table", `such as "retrybudget_ledger"`}},
		{"schema with dot", pgledger.Config{Schema: "a.b"}, []string{"pgledger.Config.Schema", `such as "public"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.FingerprintKeys = keys
			_, err := pgledger.New(nil, tt.cfg)
			if !errors.Is(err, ledger.ErrInvalidConfig) {
				t.Fatalf("error %v; want it to wrap ledger.ErrInvalidConfig", err)
			}
			for _, w := range tt.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
}
