package ledger

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrybudget/retrybudget/internal/redistest"
)

// TestRedisAOFAlwaysSurvivesKill9 pins the README's promise for
// appendfsync always: a reservation Reserve acknowledged is there after
// redis-server is SIGKILLed right after it and restarted, and its owner
// can still complete it.
func TestRedisAOFAlwaysSurvivesKill9(t *testing.T) {
	srv := redistest.StartWith(t, "--appendonly", "yes", "--appendfsync", "always")
	s := mustRedis(t, srv.Client(t), RedisConfig{})
	res, err := s.Reserve(t.Context(), ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1", Lease: time.Hour})
	if err != nil || res.Verdict != VerdictCreated {
		t.Fatalf("Reserve: %s, %v", res.Verdict, err)
	}
	srv.Kill()
	srv.Restart()
	got, err := s.Get(t.Context(), keyA)
	if err != nil || got.State != StateInProgress || got.Owner != "w1" {
		t.Fatalf("after kill -9 and restart: %+v, %v", got, err)
	}
	if err := s.Complete(t.Context(), keyA, res.Token, Outcome{Status: 200}); err != nil {
		t.Fatalf("the owner's Complete after restart: %v", err)
	}
}

// startReplica starts a replica of primary and waits until it is in sync.
func startReplica(t *testing.T, primary *redistest.Server) (*redistest.Server, *redis.Client) {
	t.Helper()
	host, port, _ := net.SplitHostPort(primary.Addr)
	replica := redistest.StartWith(t, "--replicaof", host, port)
	rc := replica.Client(t)
	poll(t, "replica link up", func() bool {
		info, err := rc.Info(t.Context(), "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up")
	})
	return replica, rc
}

// TestRedisWaitSurvivesPromotion pins WaitReplicas: a reservation
// acknowledged by a replica is on it when the primary is SIGKILLed and the
// replica promoted, as a failover would.
func TestRedisWaitSurvivesPromotion(t *testing.T) {
	// No 5 s pause before the replica's first full sync.
	primary := redistest.StartWith(t, "--repl-diskless-sync-delay", "0")
	_, rc := startReplica(t, primary)
	s := mustRedis(t, primary.Client(t), RedisConfig{WaitReplicas: 1, WaitTimeout: 5 * time.Second})
	res, err := s.Reserve(t.Context(), ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1", Lease: time.Hour})
	if err != nil || res.Verdict != VerdictCreated {
		t.Fatalf("Reserve: %s, %v", res.Verdict, err)
	}
	if err := s.Complete(t.Context(), keyA, res.Token, Outcome{Status: 201, Body: []byte("done")}); err != nil {
		t.Fatal(err)
	}
	primary.Kill()
	if err := rc.ReplicaOf(t.Context(), "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	promoted := mustRedis(t, rc, RedisConfig{})
	got, err := promoted.Reserve(t.Context(), ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w2"})
	if err != nil || got.Verdict != VerdictReplayed || string(got.Record.Outcome.Body) != "done" {
		t.Fatalf("on the promoted replica: %s %+v, %v", got.Verdict, got.Record, err)
	}
}

// TestRedisWaitFailsUnacknowledged pins that a write no replica
// acknowledges fails the call with ErrNotReplicated, and that an
// unacknowledged grant is given up as failed, so the action runs again.
func TestRedisWaitFailsUnacknowledged(t *testing.T) {
	srv := redistest.Start(t) // no replica
	client := srv.Client(t)
	s := mustRedis(t, client, RedisConfig{WaitReplicas: 1, WaitTimeout: 50 * time.Millisecond})
	_, err := s.Reserve(t.Context(), ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1"})
	if !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("Reserve without a replica: %v, want ErrNotReplicated", err)
	}
	r, err := s.Get(t.Context(), keyA)
	if err != nil || r.State != StateFailed {
		t.Fatalf("the unacknowledged grant: %+v, %v; want failed", r, err)
	}
	plain := mustRedis(t, client, RedisConfig{})
	if res, err := plain.Reserve(t.Context(), ReserveRequest{Key: keyA, Fingerprint: fpA}); err != nil || res.Verdict != VerdictRetry {
		t.Fatalf("next Reserve: %s, %v; want retry", res.Verdict, err)
	}
}

// TestRedisWaitNeedsOnePrimary pins the error for a cluster client, at
// construction.
func TestRedisWaitNeedsOnePrimary(t *testing.T) {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer c.Close()
	if _, err := NewRedis(c, RedisConfig{WaitReplicas: 1}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("NewRedis over a cluster with WaitReplicas: %v, want ErrInvalidConfig", err)
	}
}

// poll checks cond until it holds, for at most ten seconds.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling period, not synchronisation
	}
}
