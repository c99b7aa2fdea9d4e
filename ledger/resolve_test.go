package ledger

import (
	"fmt"
	"strings"
	"testing"
)

// tri is a decision-table cell: the input must be true, false, or either.
type tri uint8

const (
	either tri = iota
	yes
	no
)

func (c tri) matches(b bool) bool { return c == either || (c == yes) == b }

// matrix is the ledger's decision table written as rules rather than code,
// so TestResolveEveryInput checks Resolve against an independent statement
// of the same matrix. Every combination of inputs must match exactly one
// rule: the rules are complete and do not overlap.
var matrix = []struct {
	state                                      State
	same, expired, reconciler, honoured, limit tri
	want                                       Verdict
}{
	{StateAbsent, either, either, either, either, no, VerdictCreated},
	{StateAbsent, either, either, either, either, yes, VerdictDelayed},
	{StateExpired, either, either, either, either, no, VerdictCreated},
	{StateExpired, either, either, either, either, yes, VerdictDelayed},

	{StateInProgress, no, either, either, either, either, VerdictConflict},
	{StateCompleted, no, either, either, either, either, VerdictConflict},
	{StateFailed, no, either, either, either, either, VerdictConflict},
	{StateUncertain, no, either, either, either, either, VerdictConflict},

	{StateCompleted, yes, either, either, either, either, VerdictReplayed},
	{StateFailed, yes, either, either, either, no, VerdictRetry},
	{StateFailed, yes, either, either, either, yes, VerdictDelayed},
	{StateInProgress, yes, no, either, either, either, VerdictPending},

	{StateInProgress, yes, yes, yes, either, either, VerdictReconcile},
	{StateInProgress, yes, yes, no, yes, no, VerdictResend},
	{StateInProgress, yes, yes, no, yes, yes, VerdictDelayed},
	{StateInProgress, yes, yes, no, no, either, VerdictUncertain},

	{StateUncertain, yes, either, yes, either, either, VerdictReconcile},
	{StateUncertain, yes, either, no, yes, no, VerdictResend},
	{StateUncertain, yes, either, no, yes, yes, VerdictDelayed},
	{StateUncertain, yes, either, no, no, either, VerdictUncertain},

	{State(99), either, either, either, either, either, VerdictUncertain},
}

// everyInput returns every Input over all states (and one unknown), equal
// and different fingerprints, and all five flags.
func everyInput() []Input {
	var ins []Input
	for _, st := range []State{StateAbsent, StateInProgress, StateCompleted, StateFailed, StateUncertain, StateExpired, State(99)} {
		for bits := range 1 << 6 {
			b := func(i int) bool { return bits&(1<<i) != 0 }
			in := Input{
				State: st, Fingerprint: "A", StoredFingerprint: "A",
				LeaseExpired: b(1), Reconciler: b(2), KeysHonoured: b(3), Limited: b(4),
			}
			if b(0) {
				in.StoredFingerprint = "B"
			}
			if b(5) { // the request's fingerprint may be empty too
				in.Fingerprint, in.StoredFingerprint = "", strings.ToLower(in.StoredFingerprint)
				if !b(0) {
					in.StoredFingerprint = ""
				}
			}
			ins = append(ins, in)
		}
	}
	return ins
}

func TestResolveEveryInput(t *testing.T) {
	ins := everyInput()
	if len(ins) != 7*64 {
		t.Fatalf("enumerated %d inputs", len(ins))
	}
	for _, in := range ins {
		name := fmt.Sprintf("%+v", in)
		same := in.Fingerprint == in.StoredFingerprint
		var hits []Verdict
		for _, r := range matrix {
			if r.state == in.State && r.same.matches(same) && r.expired.matches(in.LeaseExpired) &&
				r.reconciler.matches(in.Reconciler) && r.honoured.matches(in.KeysHonoured) && r.limit.matches(in.Limited) {
				hits = append(hits, r.want)
			}
		}
		if len(hits) != 1 {
			t.Fatalf("%s: matches %d matrix rules %v, want exactly 1", name, len(hits), hits)
		}
		d := Resolve(in)
		if d.Verdict != hits[0] {
			t.Errorf("%s: Verdict = %s, want %s (path %q)", name, d.Verdict, hits[0], d.Path)
		}
		wantSend := d.Verdict == VerdictCreated || d.Verdict == VerdictRetry || d.Verdict == VerdictResend
		if d.Send != wantSend {
			t.Errorf("%s: Send = %t for %s", name, d.Send, d.Verdict)
		}
		if len(d.Path) < 2 {
			t.Errorf("%s: path %q is too short to explain anything", name, d.Path)
		}
		for _, s := range d.Path {
			if s == "" {
				t.Errorf("%s: empty step in path %q", name, d.Path)
			}
		}
	}
}

// TestResolveLimitedOnlyHoldsSends pins that a rate-limited destination
// never changes a decision that would not send, and turns each that would
// into a delay, so an action keeps its identity while it waits.
func TestResolveLimitedOnlyHoldsSends(t *testing.T) {
	for _, in := range everyInput() {
		if in.Limited {
			continue
		}
		free := Resolve(in)
		in.Limited = true
		held := Resolve(in)
		switch {
		case free.Send && held.Verdict != VerdictDelayed:
			t.Errorf("%+v: limited verdict %s, want delayed", in, held.Verdict)
		case !free.Send && held.Verdict != free.Verdict:
			t.Errorf("%+v: limited changed %s to %s", in, free.Verdict, held.Verdict)
		case held.Send:
			t.Errorf("%+v: limited decision sends", in)
		}
	}
}

func TestResolveExpiredIsDocumentedAsNew(t *testing.T) {
	absent := Resolve(Input{State: StateAbsent})
	expired := Resolve(Input{State: StateExpired, Fingerprint: "A", StoredFingerprint: "B"})
	if expired.Verdict != VerdictCreated || !expired.Send {
		t.Fatalf("expired: %+v", expired)
	}
	if !strings.Contains(strings.Join(expired.Path, " "), "new action") {
		t.Errorf("expired path %q does not say it runs as a new action", expired.Path)
	}
	if strings.Join(absent.Path, "|") == strings.Join(expired.Path, "|") {
		t.Errorf("absent and expired share a path; the expiry would be hidden")
	}
}

func TestVerdictOwns(t *testing.T) {
	for v := VerdictCreated; v <= VerdictReconcile; v++ {
		want := v == VerdictCreated || v == VerdictRetry || v == VerdictResend || v == VerdictReconcile
		if v.Owns() != want {
			t.Errorf("%s.Owns() = %t", v, v.Owns())
		}
		if got, ok := ParseVerdict(v.String()); !ok || got != v {
			t.Errorf("ParseVerdict(%q) = %v, %t", v.String(), got, ok)
		}
	}
	if s := Verdict(42).String(); s != "Verdict(42)" {
		t.Errorf("unknown verdict prints %q", s)
	}
}

// TestResolveSettlingOnlyMarksAReconcileWithoutKeys pins the settle time's
// rule: Settling never changes a verdict, and it marks exactly the
// reconcile decisions of a destination that does not honour keys, where a
// reconciler's "not found" would send the action again unkeyed.
func TestResolveSettlingOnlyMarksAReconcileWithoutKeys(t *testing.T) {
	for _, in := range everyInput() {
		plain := Resolve(in)
		in.Settling = true
		settling := Resolve(in)
		want := plain.Verdict == VerdictReconcile && !in.KeysHonoured
		if settling.Verdict != plain.Verdict || settling.Send != plain.Send {
			t.Errorf("%+v: settling changed %s to %s", in, plain.Verdict, settling.Verdict)
		}
		if settling.Settling != want || plain.Settling {
			t.Errorf("%+v: Settling %t (and %t without it), want %t", in, settling.Settling, plain.Settling, want)
		}
	}
}
