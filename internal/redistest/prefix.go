package redistest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
)

// Prefix returns a key prefix unique to this test and process, such as
// "rbtest:4242:9f86d081884c7d65:" (process id, then 64 random bits), so
// tests sharing one Redis never collide. Each call returns a new prefix. Tests must not FLUSHALL a shared
// Redis; the prefix is what keeps them apart instead.
//
// The prefix deliberately holds no '{' or '}': a hash tag in it would pin
// every key of the test to one cluster slot and override the hash tags the
// code under test chooses. The test name is left out for the same reason,
// since subtest names may contain braces. The prefix is logged so that keys
// left by a failed test can be found with redis-cli --scan.
func Prefix(t testing.TB) string {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails since Go 1.24
	p := fmt.Sprintf("rbtest:%d:%s:", os.Getpid(), hex.EncodeToString(b[:]))
	t.Logf("redistest: key prefix %s", p)
	return p
}

// LedgerKey returns the ledger fingerprint key every test of a Redis ledger
// uses (ledger.Config.FingerprintKeys), the same in every process of a
// test so that a child process reads what its parent wrote.
func LedgerKey() []byte { return []byte("redistest-ledger-fingerprint-key") }

// BoundaryKey returns the limiter boundary key every test of a Redis
// limiter uses (limiter.RedisConfig.BoundaryKey), the same in every process
// of a test so that a fleet of them shares its boundaries.
func BoundaryKey() []byte { return []byte("redistest-limiter-boundary-key") }
