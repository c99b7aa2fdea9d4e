package ledger

import (
	"slices"
	"testing"
)

// A lease granted to an earlier run of the requesting owner is decided
// exactly as an expired one, with one more step in the path; a regrant
// (the request's own grant) and a lease that really expired are not
// changed by it.
func TestResolveReclaimIsAnExpiredLease(t *testing.T) {
	for _, in := range []Input{
		{Unsent: true},
		{Reconciler: true},
		{KeysHonoured: true},
		{},
		{Limited: true, Unsent: true},
		{Limited: true, KeysHonoured: true},
	} {
		in.State, in.Fingerprint, in.StoredFingerprint = StateInProgress, "fp", "fp"
		expired := in
		expired.LeaseExpired = true
		reclaim := in
		reclaim.Reclaim = true
		want, got := Resolve(expired), Resolve(reclaim)
		if got.Verdict != want.Verdict || got.Send != want.Send {
			t.Errorf("%+v: reclaim %s send %t; an expired lease %s send %t", in, got.Verdict, got.Send, want.Verdict, want.Send)
		}
		if len(got.Path) != len(want.Path)+1 || !slices.Equal(got.Path[3:], want.Path[2:]) {
			t.Errorf("%+v: reclaim path %q; want the expired lease's %q with the reclaim step", in, got.Path, want.Path)
		}
		if both := Resolve(Input{State: StateInProgress, Fingerprint: "fp", StoredFingerprint: "fp", LeaseExpired: true, Reclaim: true, Unsent: in.Unsent,
			Reconciler: in.Reconciler, KeysHonoured: in.KeysHonoured, Limited: in.Limited}); !slices.Equal(both.Path, want.Path) {
			t.Errorf("%+v: an expired lease with Reclaim: path %q, want %q", in, both.Path, want.Path)
		}
	}
	own := Resolve(Input{State: StateInProgress, Fingerprint: "fp", StoredFingerprint: "fp", Reclaim: true, Regrant: true, Granted: VerdictCreated})
	if own.Verdict != VerdictCreated || len(own.Path) != 4 {
		t.Errorf("regrant with Reclaim: %s %q; want the grant as made", own.Verdict, own.Path)
	}
	other := Resolve(Input{State: StateCompleted, Fingerprint: "fp", StoredFingerprint: "fp", Reclaim: true})
	if other.Verdict != VerdictReplayed {
		t.Errorf("completed with Reclaim: %s, want replayed", other.Verdict)
	}
}
