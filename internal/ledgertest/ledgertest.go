// Package ledgertest builds the Redis ledger stores tests outside package
// ledger use, with the tests' fingerprint key (redistest.LedgerKey), which
// NewRedis requires.
package ledgertest

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger"
)

// Redis returns a Redis ledger over client under prefix, failing t when
// NewRedis refuses the configuration.
func Redis(t testing.TB, client redis.UniversalClient, prefix string) *ledger.Redis {
	t.Helper()
	s, err := ledger.NewRedis(client, ledger.RedisConfig{Prefix: prefix,
		Config: ledger.Config{FingerprintKeys: ledger.FingerprintKeys{redistest.LedgerKey()}}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
