package ledger

// RedisKeyName exposes the Redis key of k's record to the external tests.
func RedisKeyName(r *Redis, k Key) string { return r.keyName(k) }
