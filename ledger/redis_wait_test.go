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
	// The grant waits as long as the replica needs for its first
	// acknowledgement (it may take a few hundred ms after the link comes
	// up); the mark, after the cut, waits 100ms and must fail.
	granting := mustRedis(t, primary.Client(t), RedisConfig{WaitReplicas: 1, WaitTimeout: 5 * time.Second})
	s := mustRedis(t, primary.Client(t), RedisConfig{WaitReplicas: 1, WaitTimeout: 100 * time.Millisecond})
	const lease = 50 * time.Millisecond
	res, err := granting.Reserve(t.Context(), ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1", Lease: lease, MarksSending: true})
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

// TestRedisWaitUnacknowledgedTakeoverStaysUncertain pins what an
// unacknowledged takeover of an action that may have been sent leaves
// behind: the record goes back to uncertain, Sweep lists it, and the next
// caller with a Reconciler asks it instead of sending a second time.
func TestRedisWaitUnacknowledgedTakeoverStaysUncertain(t *testing.T) {
	client := redistest.Start(t).Client(t) // no replica: nothing is acknowledged
	plain := mustRedis(t, client, RedisConfig{})
	waiting := mustRedis(t, client, RedisConfig{WaitReplicas: 1, WaitTimeout: 20 * time.Millisecond})
	const lease = 50 * time.Millisecond
	for _, tc := range []struct {
		name     string
		takeover ReserveRequest
	}{
		{"reconcile", ReserveRequest{Reconciler: true}},
		{"resend", ReserveRequest{KeysHonoured: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := Key{Tenant: "acme", Operation: "charge", Key: "sent-" + tc.name}
			// The first owner marks the action, sends it and dies.
			first, err := plain.Reserve(t.Context(), ReserveRequest{Key: k, Fingerprint: fpA, Owner: "w1", Lease: lease, MarksSending: true})
			if err != nil || first.Verdict != VerdictCreated {
				t.Fatalf("Reserve: %s, %v", first.Verdict, err)
			}
			if err := plain.MarkSending(t.Context(), k, first.Token); err != nil {
				t.Fatal(err)
			}
			charges, asked := 1, 0
			redistest.WaitServerTime(t, client, lease)

			take := tc.takeover
			take.Key, take.Fingerprint, take.Owner = k, fpA, "w2"
			if _, err := waiting.Reserve(t.Context(), take); !errors.Is(err, ErrNotReplicated) {
				t.Fatalf("takeover without a replica: %v, want ErrNotReplicated", err)
			}
			if rec, err := plain.Get(t.Context(), k); err != nil || rec.State != StateUncertain {
				t.Fatalf("after the unacknowledged takeover: %s, %v; want uncertain", rec.State, err)
			}
			stuck, err := plain.Sweep(t.Context(), 0)
			if err != nil || !swept(stuck, k) {
				t.Fatalf("Sweep does not list the action: %d records, %v", len(stuck), err)
			}

			next, err := plain.Reserve(t.Context(), ReserveRequest{Key: k, Fingerprint: fpA, Owner: "w3", Reconciler: true})
			if err != nil {
				t.Fatal(err)
			}
			if next.Verdict == VerdictReconcile {
				asked++
			}
			if next.Send {
				charges++
			}
			if charges != 1 || asked != 1 {
				t.Fatalf("next caller: %s: %d charges, Reconciler asked %d times; want 1 and 1", next.Verdict, charges, asked)
			}
		})
	}
}

// swept reports whether records hold k.
func swept(records []Record, k Key) bool {
	for _, r := range records {
		if r.Key == k {
			return true
		}
	}
	return false
}
