package ledgertest

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger"
)

// FingerprintKeys returns the fingerprint key every store under test seals
// with (redistest.LedgerKey): shared stores refuse to start without one, and
// the suite checks what a store keeps against it.
func FingerprintKeys() ledger.FingerprintKeys {
	return ledger.FingerprintKeys{redistest.LedgerKey()}
}

// sealed is fp as a store of the suite keeps it.
func sealed(fp string) string { return FingerprintKeys().Seal(fp) }

// Redis returns a Redis ledger over client under prefix with the tests'
// fingerprint key, failing t when NewRedis refuses the configuration.
func Redis(t testing.TB, client redis.UniversalClient, prefix string) *ledger.Redis {
	t.Helper()
	s, err := ledger.NewRedis(client, ledger.RedisConfig{Prefix: prefix,
		Config: ledger.Config{FingerprintKeys: FingerprintKeys()}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
