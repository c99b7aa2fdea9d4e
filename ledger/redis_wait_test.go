package ledger

import (
	"errors"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/redistest"
)

// TestRedisWaitUnacknowledgedMarkSendsNothing pins that MarkSending waits
// for the replicas under WaitReplicas. The grant reaches the replica, the
// replica is then cut off and promoted as a failover would, and the mark
// never reaches it: MarkSending must fail, so the owner sends nothing,
// because the promoted replica sees a grant without a mark (never sent)
// and hands the action to the next caller to send.
func TestRedisWaitUnacknowledgedMarkSendsNothing(t *testing.T) {
	primary := redistest.StartWith(t, "--repl-diskless-sync-delay", "0")
	_, rc := startReplica(t, primary)
	s := mustRedis(t, primary.Client(t), RedisConfig{WaitReplicas: 1, WaitTimeout: 100 * time.Millisecond})
	const lease = 50 * time.Millisecond
	res, err := s.Reserve(t.Context(), ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1", Lease: lease, MarksSending: true})
	if err != nil || res.Verdict != VerdictCreated {
		t.Fatalf("Reserve: %s, %v", res.Verdict, err)
	}
	if err := rc.ReplicaOf(t.Context(), "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	charges := 0
	switch err := s.MarkSending(t.Context(), keyA, res.Token); {
	case err == nil:
		charges++ // the owner sends
	case !errors.Is(err, ErrNotReplicated):
		t.Fatalf("MarkSending: %v, want ErrNotReplicated", err)
	}

	promoted := mustRedis(t, rc, RedisConfig{})
	redistest.WaitServerTime(t, rc, lease)
	next, err := promoted.Reserve(t.Context(), ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w2", MarksSending: true})
	if err != nil {
		t.Fatal(err)
	}
	if next.Send {
		charges++
	}
	if charges != 1 {
		t.Fatalf("%d charges (the promoted replica said %s), want 1", charges, next.Verdict)
	}
}
