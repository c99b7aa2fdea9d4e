package ledgertest

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// Harness is one ledger.Store under the conformance suite, with the three
// things a store-agnostic test cannot do itself.
type Harness struct {
	// Store is the store under test. It must be empty: each case gets a
	// fresh Harness.
	ledger.Store
	// Advance moves the store's clock forward by at least d: a fake clock
	// for Memory, waiting on the server's clock for Redis and PostgreSQL.
	Advance func(t *testing.T, d time.Duration)
	// WaitGone returns once k's record has been dropped after its
	// retention, which the case set to Short.
	WaitGone func(t *testing.T, k ledger.Key)
	// Short is a lease or retention the harness can wait out quickly.
	Short time.Duration
}

// cases is the suite every ledger.Store must pass.
var cases = []struct {
	name string
	run  func(t *testing.T, h Harness)
}{
	{"ReserveCreates", testReserveCreates},
	{"DecisionsMatchResolve", testDecisionsMatchResolve},
	{"PendingHasRetryHint", testPendingHasRetryHint},
	{"ConflictIsError", testConflictIsError},
	{"CompleteThenReplay", testCompleteThenReplay},
	{"BodyCap", testBodyCap},
	{"FencingAfterTakeover", testFencingAfterTakeover},
	{"LateOwnerWithoutTakeoverMayComplete", testLateOwnerMayComplete},
	{"RenewKeepsLease", testRenewKeepsLease},
	{"FailedRetriesUncertainHolds", testFailedRetriesUncertainHolds},
	{"AddAttempt", testAddAttempt},
	{"HistoryCapped", testHistoryCapped},
	{"NotOwner", testNotOwner},
	{"DelayedWritesNothing", testDelayedWritesNothing},
	{"Sweep", testSweep},
	{"Reconcile", testReconcile},
	{"ExpiryAfterRetention", testExpiryAfterRetention},
	{"FencedWritesPastRetentionAreRefused", testFencedWritesPastRetention},
	{"ExpiryReported", testExpiryReported},
	{"DeadOwnerOutlivesAShortRetention", testDeadOwnerOutlivesAShortRetention},
	{"ConcurrentReserveOneWins", testConcurrentReserve},
	{"InvalidRequests", testInvalidRequests},
	{"CanceledContext", testCanceledContext},
	{"ReserveRecognisesItsOwnGrant", testReserveRecognisesItsOwnGrant},
	{"UnmarkedGrantIsProvablyUnsent", testUnmarkedGrantIsProvablyUnsent},
	{"RestartedOwnerReclaimsItsLiveLease", testRestartedOwnerReclaims},
	{"ReclaimOfAMaybeSentActionFollowsResolve", testReclaimOfMaybeSent},
	{"SharedOwnerNameIsReported", testSharedOwnerNameIsReported},
	{"RestartedOwnerWaitsOutTheSettleTime", testRestartedOwnerWaitsOutTheSettleTime},
	{"SendsRestartTheSettleTime", testSendsRestartTheSettleTime},
	{"EverySendIsFenced", testEverySendIsFenced},
	{"GrantCarriesTheMark", testGrantCarriesTheMark},
	{"SettlingCarriesTheLastSend", testSettlingCarriesTheLastSend},
	{"SettlementKeptWithTheResolution", testSettlementKeptWithTheResolution},
	{"SettlementRefusesWhatItCannotKeep", testSettlementRefusesWhatItCannotKeep},
	{"TwoOperatorsOneSettlement", testTwoOperatorsOneSettlement},
}

// Run runs the conformance suite, one subtest per case, each against a
// fresh, empty store made by newHarness. Memory, Redis and PostgreSQL pass
// it; a new Store should too before anything relies on it.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newHarness(t)) })
	}
}

var (
	keyA = ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-1"}
	fpA  = "fingerprint-A"
	fpB  = "fingerprint-B"
)

func (h Harness) reserve(t *testing.T, req ledger.ReserveRequest) ledger.Reservation {
	t.Helper()
	res, err := h.Reserve(t.Context(), req)
	if err != nil {
		t.Fatalf("Reserve(%s, %s): %v", req.Key.Key, req.Owner, err)
	}
	return res
}

func (h Harness) get(t *testing.T, k ledger.Key) ledger.Record {
	t.Helper()
	r, err := h.Get(t.Context(), k)
	if err != nil {
		t.Fatalf("Get(%s): %v", k.Key, err)
	}
	return r
}

func wantVerdict(t *testing.T, res ledger.Reservation, v ledger.Verdict) {
	t.Helper()
	if res.Verdict != v {
		t.Fatalf("Verdict = %s, want %s (path %q)", res.Verdict, v, res.Path)
	}
}

func testReserveCreates(t *testing.T, h Harness) {
	res := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1", Lease: time.Minute, Retention: time.Hour})
	wantVerdict(t, res, ledger.VerdictCreated)
	if !res.Send || res.Token == 0 || res.Err() != nil {
		t.Fatalf("Send %t, Token %d, Err %v", res.Send, res.Token, res.Err())
	}
	r := res.Record
	if r.Key != keyA || r.Fingerprint != sealed(fpA) || r.State != ledger.StateInProgress || r.Owner != "w1" || r.Outcome != nil {
		t.Fatalf("record %+v", r)
	}
	if r.CreatedAt.IsZero() || !r.ExpiresAt.Equal(r.CreatedAt.Add(time.Hour)) || !r.LeaseUntil.Equal(r.CreatedAt.Add(time.Minute)) {
		t.Fatalf("times: created %v, lease %v, expires %v", r.CreatedAt, r.LeaseUntil, r.ExpiresAt)
	}
	want := []ledger.Attempt{{N: 1, At: r.CreatedAt, Class: "created", Owner: "w1", Token: res.Token}}
	if !reflect.DeepEqual(r.Attempts, want) {
		t.Fatalf("attempts %+v, want %+v", r.Attempts, want)
	}
	if got := h.get(t, keyA); !reflect.DeepEqual(got, r) {
		t.Fatalf("Get = %+v\nReserve wrote %+v", got, r)
	}
}

// testDecisionsMatchResolve drives the store through every stored state
// and every request flag and checks that the store decided exactly what
// ledger.Resolve decides, granted ownership exactly when the verdict owns, and
// otherwise left the record untouched. For Redis this is the check that
// reserve.lua and resolve.go agree.
func testDecisionsMatchResolve(t *testing.T, h Harness) {
	type setup struct {
		state   ledger.State
		expired bool
		make    func(t *testing.T, k ledger.Key) int64 // returns the setup's token
	}
	own := func(t *testing.T, k ledger.Key, lease time.Duration) int64 {
		return h.reserve(t, ledger.ReserveRequest{Key: k, Fingerprint: fpA, Owner: "setup", Lease: lease}).Token
	}
	sent := func(t *testing.T, k ledger.Key, lease time.Duration) int64 {
		tok := h.reserve(t, ledger.ReserveRequest{Key: k, Fingerprint: fpA, Owner: "setup", Lease: lease, Settle: time.Hour, MarksSending: true}).Token
		if err := h.MarkSending(t.Context(), k, tok); err != nil {
			t.Fatal(err)
		}
		return tok
	}
	setups := map[string]setup{
		"absent": {ledger.StateAbsent, false, func(*testing.T, ledger.Key) int64 { return 0 }},
		"alive":  {ledger.StateInProgress, false, func(t *testing.T, k ledger.Key) int64 { return own(t, k, time.Hour) }},
		"stuck":  {ledger.StateInProgress, true, func(t *testing.T, k ledger.Key) int64 { return own(t, k, h.Short) }},
		"completed": {ledger.StateCompleted, false, func(t *testing.T, k ledger.Key) int64 {
			tok := own(t, k, time.Hour)
			if err := h.Complete(t.Context(), k, tok, ledger.Outcome{Status: 200, Body: []byte("ok")}); err != nil {
				t.Fatal(err)
			}
			return tok
		}},
		"failed": {ledger.StateFailed, false, func(t *testing.T, k ledger.Key) int64 {
			tok := own(t, k, time.Hour)
			if err := h.Fail(t.Context(), k, tok, ledger.Failure{Reason: "refused"}); err != nil {
				t.Fatal(err)
			}
			return tok
		}},
		// Held under a live lease by an earlier run of the probing owner,
		// which restarted: the probe reclaims it (Input.Reclaim).
		"restarted": {ledger.StateInProgress, false, func(t *testing.T, k ledger.Key) int64 {
			return h.reserve(t, ledger.ReserveRequest{Key: k, Fingerprint: fpA, Owner: "probe", Instance: "run-0", Lease: time.Hour}).Token
		}},
		"uncertain": {ledger.StateUncertain, false, func(t *testing.T, k ledger.Key) int64 {
			tok := own(t, k, time.Hour)
			if err := h.Fail(t.Context(), k, tok, ledger.Failure{EffectPossible: true, Reason: "timeout"}); err != nil {
				t.Fatal(err)
			}
			return tok
		}},
		// Marked as sending with an hour's settle time: the lease runs
		// out, the settle time does not (Input.Settling).
		"sent-stuck": {ledger.StateInProgress, true, func(t *testing.T, k ledger.Key) int64 {
			return sent(t, k, h.Short)
		}},
		"sent-uncertain": {ledger.StateUncertain, false, func(t *testing.T, k ledger.Key) int64 {
			tok := sent(t, k, time.Hour)
			if err := h.Fail(t.Context(), k, tok, ledger.Failure{EffectPossible: true, Reason: "timeout"}); err != nil {
				t.Fatal(err)
			}
			return tok
		}},
	}

	type scenario struct {
		name  string
		setup setup
		key   ledger.Key
		token int64
		req   ledger.ReserveRequest
		// reclaim: the setup's grant went to another run of the probe.
		reclaim bool
		// settling: the setup's send is within its settle time.
		settling bool
	}
	var scenarios []scenario
	for name, s := range setups {
		for bits := range 1 << 5 {
			k := ledger.Key{Tenant: "acme", Operation: "matrix", Key: fmt.Sprintf("%s-%d", name, bits)}
			req := ledger.ReserveRequest{
				Key: k, Fingerprint: fpA, Owner: "probe", Instance: "run-1", Lease: time.Hour,
				Limited: bits&1 != 0, Reconciler: bits&2 != 0, KeysHonoured: bits&4 != 0,
			}
			if bits&8 != 0 {
				req.Fingerprint = fpB
			}
			req.ReplacesFailed = bits&16 != 0
			scenarios = append(scenarios, scenario{name: k.Key, setup: s, key: k, token: s.make(t, k), req: req,
				reclaim: name == "restarted", settling: strings.HasPrefix(name, "sent-")})
		}
	}
	h.Advance(t, h.Short) // every "stuck" lease is now over; "alive" ones run for an hour

	for _, sc := range scenarios {
		before, beforeErr := h.Get(t.Context(), sc.key)
		res := h.reserve(t, sc.req)
		stored := ""
		if sc.setup.state != ledger.StateAbsent {
			stored = fpA
		}
		want := ledger.Resolve(ledger.Input{
			State: sc.setup.state, Fingerprint: sc.req.Fingerprint, StoredFingerprint: stored,
			LeaseExpired: sc.setup.expired, Limited: sc.req.Limited,
			Reconciler: sc.req.Reconciler, KeysHonoured: sc.req.KeysHonoured, Reclaim: sc.reclaim,
			Settling: sc.settling, ReplacesFailed: sc.req.ReplacesFailed,
		})
		if !reflect.DeepEqual(res.Decision, want) {
			t.Errorf("%s: store decided %s %q,\nResolve decides %s %q", sc.name, res.Verdict, res.Path, want.Verdict, want.Path)
			continue
		}
		after, afterErr := h.Get(t.Context(), sc.key)
		if !res.Verdict.Owns() {
			if res.Token != 0 {
				t.Errorf("%s: %s handed out token %d", sc.name, res.Verdict, res.Token)
			}
			if !errors.Is(afterErr, beforeErr) || !reflect.DeepEqual(after, before) {
				t.Errorf("%s: %s changed the record:\nbefore %+v (%v)\nafter  %+v (%v)", sc.name, res.Verdict, before, beforeErr, after, afterErr)
			}
			continue
		}
		if afterErr != nil || after.State != ledger.StateInProgress || after.Owner != "probe" || !reflect.DeepEqual(after, res.Record) {
			t.Errorf("%s: %s left %+v (%v), reservation says %+v", sc.name, res.Verdict, after, afterErr, res.Record)
			continue
		}
		last := after.Attempts[len(after.Attempts)-1]
		if last.Class != res.Verdict.String() || last.Token != res.Token || last.Owner != "probe" {
			t.Errorf("%s: last attempt %+v", sc.name, last)
		}
		if sc.setup.state != ledger.StateAbsent {
			// A takeover keeps the action's identity and bumps the token;
			// a failed record replaced takes the request's fingerprint.
			fp := sealed(fpA)
			if sc.setup.state == ledger.StateFailed && sc.req.ReplacesFailed {
				fp = sealed(sc.req.Fingerprint)
			}
			if res.Token != sc.token+1 || !after.CreatedAt.Equal(before.CreatedAt) || after.Fingerprint != fp || len(after.Attempts) != len(before.Attempts)+1 {
				t.Errorf("%s: takeover token %d after %d, record %+v", sc.name, res.Token, sc.token, after)
			}
		}
	}
}
