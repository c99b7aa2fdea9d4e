package ledgercli_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/ledgercli"
)

// stuck returns a Memory store holding one action uncertain, as a worker
// whose send timed out leaves it, with the store's clock after later (an
// hour is past the settle time, a second inside it), and the action's key.
func stuck(t *testing.T, after time.Duration) (*ledger.Memory, ledger.Key) {
	t.Helper()
	ctx := context.Background()
	clock := time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)
	s := ledger.NewMemory(ledger.MemoryConfig{Now: func() time.Time { return clock }})
	k := ledger.Key{Tenant: "acme", Operation: "sms.send", Key: "m-1"}
	res, err := s.Reserve(ctx, ledger.ReserveRequest{Key: k, Fingerprint: "f", Owner: "worker-1", MarksSending: true, Sending: true})
	if err != nil || !res.Verdict.Owns() {
		t.Fatalf("Reserve: %v %v", res.Verdict, err)
	}
	if err := s.Fail(ctx, k, res.Token, ledger.Failure{EffectPossible: true, Reason: "timeout after the send"}); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(after)
	return s, k
}

// notApplied is an operator's resolution: the provider did not apply it.
func notApplied(by string) ledger.Resolution {
	return ledger.Resolution{State: ledger.StateFailed, Reason: "not in the provider's log",
		Settlement: &ledger.Settlement{By: by, Reason: "not in the provider's log"}}
}

// applied is an operator's resolution: the provider applied it.
func applied(by string) ledger.Resolution {
	return ledger.Resolution{State: ledger.StateCompleted, Outcome: ledger.Outcome{Status: 200},
		Settlement: &ledger.Settlement{By: by, Reason: "in the provider's log"}}
}

// TestResolveLeavesAFailedActionAlone pins that an action another operator
// already settled as not applied is left as it is, and the error names that
// settlement: a reconciler's Reserve would take a failed action over as a
// retry, so Resolve must refuse before it reserves.
func TestResolveLeavesAFailedActionAlone(t *testing.T) {
	ctx := context.Background()
	s, k := stuck(t, time.Hour)
	if _, err := ledgercli.Resolve(ctx, s, k, notApplied("alice"), "console:alice"); err != nil {
		t.Fatal(err)
	}
	before, err := s.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ledgercli.Resolve(ctx, s, k, applied("bob"), "console:bob")
	if !errors.Is(err, ledger.ErrNotOwner) || !strings.Contains(err.Error(), "already settled as not applied by alice") {
		t.Fatalf("second Resolve: %v; want ErrNotOwner naming alice's settlement", err)
	}
	after, err := s.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	// A takeover would have added an attempt and rewritten the reason.
	if after.State != ledger.StateFailed || len(after.Attempts) != len(before.Attempts) || after.Reason != before.Reason ||
		after.Settlement == nil || after.Settlement.By != "alice" {
		t.Errorf("record after the second Resolve: %s, %d attempts (were %d), reason %q (was %q), settlement %+v; want alice's, untouched",
			after.State, len(after.Attempts), len(before.Attempts), after.Reason, before.Reason, after.Settlement)
	}
}

// settleFirst is a Store on which another operator settles the action as
// not applied right before the first Reserve: the schedule in which two
// operators both read the action stuck and one settles it between the
// other's read and its takeover.
type settleFirst struct {
	ledger.Store
	t    *testing.T
	done bool
}

func (s *settleFirst) Reserve(ctx context.Context, req ledger.ReserveRequest) (ledger.Reservation, error) {
	if !s.done {
		s.done = true
		if _, err := ledgercli.Resolve(ctx, s.Store, req.Key, notApplied("alice"), "console:alice"); err != nil {
			s.t.Fatalf("the other operator's Resolve: %v", err)
		}
	}
	return s.Store.Reserve(ctx, req)
}

// TestResolveAfterAnotherSettledNamesIt pins the schedule in which the
// action is settled between Resolve's read and its takeover: the second
// operator is told who settled it, not that its own resolution stands.
func TestResolveAfterAnotherSettledNamesIt(t *testing.T) {
	ctx := context.Background()
	mem, k := stuck(t, time.Hour)
	s := &settleFirst{Store: mem, t: t}
	_, err := ledgercli.Resolve(ctx, s, k, applied("bob"), "console:bob")
	if !s.done {
		t.Fatal("the other operator never settled")
	}
	if !errors.Is(err, ledger.ErrNotOwner) || !strings.Contains(err.Error(), "already settled as not applied by alice") {
		t.Fatalf("Resolve: %v; want ErrNotOwner naming alice's settlement", err)
	}
	rec, err := mem.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != ledger.StateFailed || rec.Settlement == nil || rec.Settlement.By != "alice" {
		t.Errorf("record: %s, settlement %+v; want failed, alice's", rec.State, rec.Settlement)
	}
}

// "ledger resolve --failed" inside the last send's settle time settles
// nothing (the store keeps the action uncertain: a request already sent
// may still reach the provider), and says so: exit status 1 naming when
// to run it again, never "resolved" and 0.
func TestResolveFailedInsideTheSettleTimeExitsOne(t *testing.T) {
	ctx := context.Background()
	s, k := stuck(t, time.Second)
	open := func(context.Context, string) (ledger.Store, func(), error) { return s, func() {}, nil }
	var out, errOut bytes.Buffer
	code := ledgercli.Run([]string{"resolve", "--url", "mem://", "--tenant", k.Tenant, "--operation", k.Operation, "--key", k.Key,
		"--failed", "--reason", "not in the provider's log", "--owner", "alice"}, &out, &errOut, open)
	rec, err := s.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if code != 1 || out.Len() != 0 || !strings.Contains(errOut.String(), "settle time of its last send has not ended") ||
		!strings.Contains(errOut.String(), rec.SettleUntil.UTC().Format(time.RFC3339)) || rec.State != ledger.StateUncertain {
		t.Fatalf("exit %d, stdout %q, stderr %q, record %s; want 1, nothing on stdout, the settle time's end on stderr, still uncertain",
			code, out.String(), errOut.String(), rec.State)
	}
}
