package ledgercli

import (
	"fmt"
	"os"

	"github.com/retrybudget/retrybudget/ledger"
)

// FingerprintKeyEnv names the environment variable holding the
// deployment's fingerprint key (ledger.FingerprintKeys), which a shared
// store requires. The operator's commands compare the fingerprints a store
// already keeps sealed, so any key of the deployment serves; the variable
// keeps the secret off the command line.
const FingerprintKeyEnv = "RETRYBUDGET_FINGERPRINT_KEY"

// FingerprintKeys returns the key in FingerprintKeyEnv, or an error naming
// the variable when it is unset or too short.
func FingerprintKeys() (ledger.FingerprintKeys, error) {
	keys := ledger.FingerprintKeys{[]byte(os.Getenv(FingerprintKeyEnv))}
	if err := keys.Validate(); err != nil {
		return nil, fmt.Errorf("$%s: %w", FingerprintKeyEnv, err)
	}
	return keys, nil
}
