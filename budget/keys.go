package budget

import (
	"strconv"
	"time"

	"github.com/retrybudget/retrybudget/internal/keyedhash"
)

// DefaultPrefix starts every key when RedisConfig.Prefix is empty.
const DefaultPrefix = "retrybudget:budget:"

// keyDomain separates these hashes from any other use of the same
// DestinationKey, so a destination's key cannot be matched against another
// package's keys.
const keyDomain = "retrybudget/budget/key/v2"

// destKey returns the Redis key of dest's budget: prefix{hash}. The
// destination is hashed, never embedded, because a custom
// Config.Destination may return anything (a credential, or braces that
// would break the hash tag), and hashes keep keys short. The hash is an
// HMAC under the deployment's RedisConfig.DestinationKey: a plain hash of
// a destination holding a credential hash (limiter.ByCredential) lets
// whoever can list Redis keys test guessed credentials offline. The braces
// make the hash the cluster hash tag, so destinations spread over slots
// while each decision touches one key on one slot.
func destKey(h keyedhash.Hasher, prefix, dest string) string {
	return prefix + "{" + h.Sum(keyDomain, dest, 32) + "}"
}

// rulePrefix adds the window to prefix. The script names its counters by
// slot number, and a slot is a tenth of the window: processes with another
// window (during a rolling deploy that changes it) must count under other
// keys, or each would read the other's slots as future or stale ones.
func rulePrefix(prefix string, window time.Duration) string {
	return prefix + "w" + strconv.FormatInt(window.Microseconds(), 10) + ":"
}
