// Package redisstore is the Redis plumbing shared by the packages that keep
// state in Redis (limiter, budget, ledger), written once so they cannot
// drift: the check of a client at construction, whether a client honours
// context deadlines on the socket, the round trip bounded by a timeout
// even when it does not, the key-prefix rule, the mode a component falls
// back to while Redis is unavailable, and the health tracker that decides
// when to probe it again.
package redisstore
