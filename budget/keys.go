package budget

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
)

// DefaultPrefix starts every key when RedisConfig.Prefix is empty.
const DefaultPrefix = "retrybudget:budget:"

// keyDomain separates these hashes from any other SHA-256 use, so a
// destination's key cannot be matched against another package's keys.
const keyDomain = "retrybudget/budget/key/v1"

// destKey returns the Redis key of dest's budget: prefix{hash}. The
// destination is hashed, never embedded, because a custom
// Config.Destination may return anything (a credential, or braces that
// would break the hash tag), and hashes keep keys short. The braces make
// the hash the cluster hash tag, so destinations spread over slots while
// each decision touches one key on one slot.
func destKey(prefix, dest string) string {
	h := sha256.New()
	h.Write([]byte(keyDomain))
	h.Write([]byte{0})
	h.Write([]byte(dest))
	return prefix + "{" + hex.EncodeToString(h.Sum(nil)[:16]) + "}"
}

// rulePrefix adds the window to prefix. The script names its counters by
// slot number, and a slot is a tenth of the window: processes with another
// window (during a rolling deploy that changes it) must count under other
// keys, or each would read the other's slots as future or stale ones.
func rulePrefix(prefix string, window time.Duration) string {
	return prefix + "w" + strconv.FormatInt(window.Microseconds(), 10) + ":"
}
