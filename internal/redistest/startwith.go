package redistest

import "testing"

// StartWith is Start with more redis-server arguments, which override the
// defaults: "--appendonly", "yes", "--appendfsync", "always" for a server
// whose data survives Kill and Restart, or "--replicaof", host, port for a
// replica.
func StartWith(t testing.TB, args ...string) *Server {
	t.Helper()
	bin := lookBinary(t, "redis-server", noRedis)
	s, err := startServerWith(t, bin, t.TempDir(), args, false)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
