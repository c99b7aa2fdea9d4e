package redisstore

import (
	"errors"

	"github.com/redis/go-redis/v9"
)

// ErrNilClient is the cause of a constructor's error for a nil client, or a
// nil pointer of one of go-redis's client types, which would otherwise
// panic at the first command.
var ErrNilClient = errors.New("nil Redis client: pass one such as redis.NewClient(&redis.Options{Addr: os.Getenv(\"REDIS_ADDR\"), ContextTimeoutEnabled: true})")

// CheckClient returns ErrNilClient when rdb is nil or a typed nil
// *redis.Client, *redis.ClusterClient or *redis.Ring; otherwise nil.
func CheckClient(rdb redis.UniversalClient) error {
	switch c := rdb.(type) {
	case nil:
		return ErrNilClient
	case *redis.Client:
		if c == nil {
			return ErrNilClient
		}
	case *redis.ClusterClient:
		if c == nil {
			return ErrNilClient
		}
	case *redis.Ring:
		if c == nil {
			return ErrNilClient
		}
	}
	return nil
}

// HonoursContext reports whether rdb applies context deadlines to socket
// reads and writes; go-redis does only with ContextTimeoutEnabled. A client
// type it does not know is assumed not to.
func HonoursContext(rdb redis.UniversalClient) bool {
	switch c := rdb.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

// Setup applies the checks every Redis constructor makes before it builds
// anything: the client (CheckClient) and the key prefix (Prefix, with def
// for an empty one). It returns the prefix to use; the error is for the
// caller to wrap in its own sentinel.
func Setup(rdb redis.UniversalClient, prefix, def string) (string, error) {
	if err := CheckClient(rdb); err != nil {
		return "", err
	}
	return Prefix(prefix, def)
}
