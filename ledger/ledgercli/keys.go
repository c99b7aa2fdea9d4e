package ledgercli

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/retrybudget/retrybudget/ledger"
)

// FingerprintKeyEnv names the environment variable holding the
// deployment's fingerprint key (ledger.FingerprintKeys), which a shared
// store requires. The operator's commands compare the fingerprints a store
// already keeps sealed, so any key of the deployment serves; the variable
// keeps the secret off the command line.
const FingerprintKeyEnv = "RETRYBUDGET_FINGERPRINT_KEY"

// EncryptionKeysEnv names the environment variable holding the
// deployment's ledger.EncryptionKeys, for a store whose records are
// encrypted: base64 (standard encoding) keys of 16, 24 or 32 bytes,
// comma-separated, the newest first. Unset means the store's records are
// not encrypted. Without it, a command that shows stored responses cannot
// read an encrypted store.
const EncryptionKeysEnv = "RETRYBUDGET_ENCRYPTION_KEYS"

// FingerprintKeys returns the key in FingerprintKeyEnv, or an error naming
// the variable when it is unset or too short.
func FingerprintKeys() (ledger.FingerprintKeys, error) {
	keys := ledger.FingerprintKeys{[]byte(os.Getenv(FingerprintKeyEnv))}
	if err := keys.Validate(); err != nil {
		return nil, fmt.Errorf("$%s: %w", FingerprintKeyEnv, err)
	}
	return keys, nil
}

// EncryptionKeys returns the keys in EncryptionKeysEnv (nil when unset), or
// an error naming the variable, never its value, when one does not decode
// or has the wrong length.
func EncryptionKeys() (ledger.EncryptionKeys, error) {
	raw := os.Getenv(EncryptionKeysEnv)
	if raw == "" {
		return nil, nil
	}
	var keys ledger.EncryptionKeys
	for i, s := range strings.Split(raw, ",") {
		k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("$%s: key %d is not base64", EncryptionKeysEnv, i)
		}
		keys = append(keys, k)
	}
	if err := keys.Validate(); err != nil {
		return nil, fmt.Errorf("$%s: %w", EncryptionKeysEnv, err)
	}
	return keys, nil
}

// Config returns the ledger.Config an operator's command opens a shared
// store with: the fingerprint key and, when set, the encryption keys, both
// from the environment.
func Config() (ledger.Config, error) {
	fp, err := FingerprintKeys()
	if err != nil {
		return ledger.Config{}, err
	}
	enc, err := EncryptionKeys()
	if err != nil {
		return ledger.Config{}, err
	}
	return ledger.Config{FingerprintKeys: fp, EncryptionKeys: enc}, nil
}

// URLError returns err, from parsing the store's URL, without the URL it
// may quote: a URL that does not parse may still hold the store's password.
func URLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("--url does not parse: %w", ue.Err)
	}
	return fmt.Errorf("--url does not parse: %w", err)
}
