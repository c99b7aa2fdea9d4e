package ledger

import "context"

// RedisKeyName exposes the Redis key of k's record to the external tests.
func RedisKeyName(r *Redis, k Key) string { return r.keyName(k) }

// HeldVersion exposes the version of k's held-index entry.
func HeldVersion(r *Redis, k Key) (string, error) { return r.heldVersion(context.Background(), k) }

// HeldKeys exposes the keys of the held index.
func HeldKeys(r *Redis) []string { return r.heldKeys() }

// UnindexHeld exposes the removal of held-index entries by version.
func UnindexHeld(r *Redis, k Key, version string) {
	r.unindexHeld(context.Background(), map[string]string{k.ID(): version})
}
