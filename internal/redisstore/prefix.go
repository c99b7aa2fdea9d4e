package redisstore

import (
	"fmt"
	"strings"
)

// Prefix applies the key-prefix rule of every Redis component: an empty
// prefix means def, and a prefix must not contain '{' or '}', which would
// move the cluster hash tag off the part of the key each component chooses
// (a hashed boundary, destination or action) and pin every key to one slot.
// The error is for the caller to wrap in its own sentinel.
func Prefix(prefix, def string) (string, error) {
	if prefix == "" {
		return def, nil
	}
	if strings.ContainsAny(prefix, "{}") {
		return "", fmt.Errorf("RedisConfig.Prefix %q must not contain '{' or '}': leave it empty for %q or use one such as %q", prefix, def, "myapp:"+strings.TrimPrefix(def, "retrybudget:"))
	}
	return prefix, nil
}
