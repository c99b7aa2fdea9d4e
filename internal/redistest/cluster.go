package redistest

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterMasters is the node count of a test cluster: three is the minimum
// that redis-cli --cluster create accepts for masters.
const clusterMasters = 3

// createTimeout bounds redis-cli --cluster create, which normally takes about
// two seconds because it polls for the nodes to agree once a second.
const createTimeout = 30 * time.Second

// noCluster is the message for a missing redis-server or redis-cli.
const noCluster = "redistest: no Redis Cluster: install redis-server and redis-cli"

// Cluster is a local three-master Redis Cluster without replicas on free
// loopback ports, killed at t.Cleanup.
type Cluster struct {
	// Addrs holds each master's "127.0.0.1:port".
	Addrs []string

	nodes []*Server
}

// StartCluster starts three redis-server processes in cluster mode, joins
// them with redis-cli --cluster create, and waits until every node reports
// cluster_state:ok with all 16384 slots covered. Each node's client port is
// below 55535 so that its cluster bus port, port+10000, is valid, and that
// bus port was free too. Node config files and logs live under t.TempDir.
//
// Without redis-server or redis-cli on PATH the test is skipped, or failed
// when [RequireEnv] is set. Any other failure fails the test.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	server := lookBinary(t, "redis-server", noCluster)
	cli := lookBinary(t, "redis-cli", noCluster)
	dir := t.TempDir()
	c := &Cluster{}
	for range clusterMasters {
		n, err := startServer(t, server, dir, true)
		if err != nil {
			t.Fatal(err)
		}
		c.nodes = append(c.nodes, n)
		c.Addrs = append(c.Addrs, n.Addr)
	}

	ctx, cancel := context.WithTimeout(context.Background(), createTimeout)
	defer cancel()
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}

	for _, n := range c.nodes {
		if err := waitFor(n.exitedChan(), func() error { return clusterOK(n.Addr) }); err != nil {
			t.Fatalf("redistest: cluster node %s: %v", n.Addr, err)
		}
	}
	return c
}

// Client returns a cluster client seeded with every node, closed at
// t.Cleanup.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}
