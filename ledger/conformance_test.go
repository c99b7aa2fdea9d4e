package ledger

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// harness is one Store under the conformance suite, with the two things a
// store-agnostic test cannot do itself.
type harness struct {
	Store
	// advance moves the store's clock forward by at least d: a fake clock
	// for Memory, waiting on the server's TIME for Redis.
	advance func(t *testing.T, d time.Duration)
	// waitGone returns once k's record has been dropped after its
	// retention, which the test set to h.short.
	waitGone func(t *testing.T, k Key)
	// short is a lease or retention the harness can wait out quickly.
	short time.Duration
}

// conformance is the suite every Store must pass. Each case gets a fresh,
// empty store.
var conformance = []struct {
	name string
	run  func(t *testing.T, h harness)
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
	{"NotOwner", testNotOwner},
	{"DelayedWritesNothing", testDelayedWritesNothing},
	{"Sweep", testSweep},
	{"Reconcile", testReconcile},
	{"ExpiryAfterRetention", testExpiryAfterRetention},
	{"ConcurrentReserveOneWins", testConcurrentReserve},
	{"InvalidRequests", testInvalidRequests},
	{"CanceledContext", testCanceledContext},
}

// runConformance runs the suite against stores made by newHarness.
func runConformance(t *testing.T, newHarness func(t *testing.T) harness) {
	for _, tc := range conformance {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newHarness(t)) })
	}
}

var (
	keyA = Key{Tenant: "acme", Operation: "charge", Key: "order-1"}
	fpA  = "fingerprint-A"
	fpB  = "fingerprint-B"
)

func (h harness) reserve(t *testing.T, req ReserveRequest) Reservation {
	t.Helper()
	res, err := h.Reserve(t.Context(), req)
	if err != nil {
		t.Fatalf("Reserve(%s, %s): %v", req.Key.Key, req.Owner, err)
	}
	return res
}

func (h harness) get(t *testing.T, k Key) Record {
	t.Helper()
	r, err := h.Get(t.Context(), k)
	if err != nil {
		t.Fatalf("Get(%s): %v", k.Key, err)
	}
	return r
}

func wantVerdict(t *testing.T, res Reservation, v Verdict) {
	t.Helper()
	if res.Verdict != v {
		t.Fatalf("Verdict = %s, want %s (path %q)", res.Verdict, v, res.Path)
	}
}

func testReserveCreates(t *testing.T, h harness) {
	res := h.reserve(t, ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1", Lease: time.Minute, Retention: time.Hour})
	wantVerdict(t, res, VerdictCreated)
	if !res.Send || res.Token == 0 || res.Err() != nil {
		t.Fatalf("Send %t, Token %d, Err %v", res.Send, res.Token, res.Err())
	}
	r := res.Record
	if r.Key != keyA || r.Fingerprint != fpA || r.State != StateInProgress || r.Owner != "w1" || r.Outcome != nil {
		t.Fatalf("record %+v", r)
	}
	if r.CreatedAt.IsZero() || !r.ExpiresAt.Equal(r.CreatedAt.Add(time.Hour)) || !r.LeaseUntil.Equal(r.CreatedAt.Add(time.Minute)) {
		t.Fatalf("times: created %v, lease %v, expires %v", r.CreatedAt, r.LeaseUntil, r.ExpiresAt)
	}
	want := []Attempt{{N: 1, At: r.CreatedAt, Class: "created", Owner: "w1", Token: res.Token}}
	if !reflect.DeepEqual(r.Attempts, want) {
		t.Fatalf("attempts %+v, want %+v", r.Attempts, want)
	}
	if got := h.get(t, keyA); !reflect.DeepEqual(got, r) {
		t.Fatalf("Get = %+v\nReserve wrote %+v", got, r)
	}
}

// testDecisionsMatchResolve drives the store through every stored state
// and every request flag and checks that the store decided exactly what
// Resolve decides, granted ownership exactly when the verdict owns, and
// otherwise left the record untouched. For Redis this is the check that
// reserve.lua and resolve.go agree.
func testDecisionsMatchResolve(t *testing.T, h harness) {
	type setup struct {
		state   State
		expired bool
		make    func(t *testing.T, k Key) int64 // returns the setup's token
	}
	own := func(t *testing.T, k Key, lease time.Duration) int64 {
		return h.reserve(t, ReserveRequest{Key: k, Fingerprint: fpA, Owner: "setup", Lease: lease}).Token
	}
	setups := map[string]setup{
		"absent": {StateAbsent, false, func(*testing.T, Key) int64 { return 0 }},
		"alive":  {StateInProgress, false, func(t *testing.T, k Key) int64 { return own(t, k, time.Hour) }},
		"stuck":  {StateInProgress, true, func(t *testing.T, k Key) int64 { return own(t, k, h.short) }},
		"completed": {StateCompleted, false, func(t *testing.T, k Key) int64 {
			tok := own(t, k, time.Hour)
			if err := h.Complete(t.Context(), k, tok, Outcome{Status: 200, Body: []byte("ok")}); err != nil {
				t.Fatal(err)
			}
			return tok
		}},
		"failed": {StateFailed, false, func(t *testing.T, k Key) int64 {
			tok := own(t, k, time.Hour)
			if err := h.Fail(t.Context(), k, tok, Failure{Reason: "refused"}); err != nil {
				t.Fatal(err)
			}
			return tok
		}},
		"uncertain": {StateUncertain, false, func(t *testing.T, k Key) int64 {
			tok := own(t, k, time.Hour)
			if err := h.Fail(t.Context(), k, tok, Failure{EffectPossible: true, Reason: "timeout"}); err != nil {
				t.Fatal(err)
			}
			return tok
		}},
	}

	type scenario struct {
		name  string
		setup setup
		key   Key
		token int64
		req   ReserveRequest
	}
	var scenarios []scenario
	for name, s := range setups {
		for bits := range 1 << 4 {
			k := Key{Tenant: "acme", Operation: "matrix", Key: fmt.Sprintf("%s-%d", name, bits)}
			req := ReserveRequest{
				Key: k, Fingerprint: fpA, Owner: "probe", Lease: time.Hour,
				Limited: bits&1 != 0, Reconciler: bits&2 != 0, KeysHonoured: bits&4 != 0,
			}
			if bits&8 != 0 {
				req.Fingerprint = fpB
			}
			scenarios = append(scenarios, scenario{name: k.Key, setup: s, key: k, token: s.make(t, k), req: req})
		}
	}
	h.advance(t, h.short) // every "stuck" lease is now over; "alive" ones run for an hour

	for _, sc := range scenarios {
		before, beforeErr := h.Get(t.Context(), sc.key)
		res := h.reserve(t, sc.req)
		stored := ""
		if sc.setup.state != StateAbsent {
			stored = fpA
		}
		want := Resolve(Input{
			State: sc.setup.state, Fingerprint: sc.req.Fingerprint, StoredFingerprint: stored,
			LeaseExpired: sc.setup.expired, Limited: sc.req.Limited,
			Reconciler: sc.req.Reconciler, KeysHonoured: sc.req.KeysHonoured,
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
		if afterErr != nil || after.State != StateInProgress || after.Owner != "probe" || !reflect.DeepEqual(after, res.Record) {
			t.Errorf("%s: %s left %+v (%v), reservation says %+v", sc.name, res.Verdict, after, afterErr, res.Record)
			continue
		}
		last := after.Attempts[len(after.Attempts)-1]
		if last.Class != res.Verdict.String() || last.Token != res.Token || last.Owner != "probe" {
			t.Errorf("%s: last attempt %+v", sc.name, last)
		}
		if sc.setup.state != StateAbsent {
			// A takeover keeps the action's identity and bumps the token.
			if res.Token != sc.token+1 || !after.CreatedAt.Equal(before.CreatedAt) || after.Fingerprint != fpA || len(after.Attempts) != len(before.Attempts)+1 {
				t.Errorf("%s: takeover token %d after %d, record %+v", sc.name, res.Token, sc.token, after)
			}
		}
	}
}

func testPendingHasRetryHint(t *testing.T, h harness) {
	lease := 10 * time.Minute
	h.reserve(t, ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1", Lease: lease})
	res := h.reserve(t, ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w2"})
	wantVerdict(t, res, VerdictPending)
	if res.RetryAfter <= 0 || res.RetryAfter > lease {
		t.Fatalf("RetryAfter = %s, want in (0, %s]", res.RetryAfter, lease)
	}
	var e *Error
	if !errors.As(res.Err(), &e) || !errors.Is(res.Err(), ErrPending) || e.RetryAfter != res.RetryAfter || e.Key != keyA {
		t.Fatalf("Err() = %#v", res.Err())
	}
	if strings.Contains(e.Error(), keyA.Key) {
		t.Errorf("error message %q leaks the raw key", e.Error())
	}
}

func testConflictIsError(t *testing.T, h harness) {
	h.reserve(t, ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1"})
	res := h.reserve(t, ReserveRequest{Key: keyA, Fingerprint: fpB, Owner: "w2"})
	wantVerdict(t, res, VerdictConflict)
	var e *Error
	if !errors.Is(res.Err(), ErrConflict) || !errors.As(res.Err(), &e) || e.State != StateInProgress || e.Verdict != VerdictConflict {
		t.Fatalf("Err() = %v", res.Err())
	}
}

func testCompleteThenReplay(t *testing.T, h harness) {
	res := h.reserve(t, ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1"})
	out := Outcome{
		Status: 201,
		Header: http.Header{
			"Content-Type": {"application/json"}, "Request-Id": {"req_1"},
			"Set-Cookie": {"s=secret"}, "Authorization": {"Bearer secret"}, "X-Other": {"1"},
		},
		Body: []byte("{\"id\":\"ch_1\"}\x00\xff binary-safe"),
	}
	if err := h.Complete(t.Context(), keyA, res.Token, out); err != nil {
		t.Fatal(err)
	}
	replay := h.reserve(t, ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w2"})
	wantVerdict(t, replay, VerdictReplayed)
	if replay.Err() != nil || replay.Send || replay.Token != 0 {
		t.Fatalf("replay: Err %v, Send %t, Token %d", replay.Err(), replay.Send, replay.Token)
	}
	got := replay.Record.Outcome
	want := Config{}.storedOutcome(out)
	if got == nil || !reflect.DeepEqual(*got, *want) {
		t.Fatalf("replayed outcome %+v, want %+v", got, want)
	}
	if _, ok := got.Header["Set-Cookie"]; ok || got.Header.Get("Authorization") != "" {
		t.Fatal("a credential header was stored")
	}
	if r := h.get(t, keyA); r.State != StateCompleted || !r.LeaseUntil.IsZero() || r.Owner != "w1" {
		t.Fatalf("record %+v", r)
	}
	if err := h.Complete(t.Context(), keyA, res.Token, out); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("second Complete: %v, want ErrNotOwner", err)
	}
}

func testBodyCap(t *testing.T, h harness) {
	for i, n := range []int{0, DefaultMaxBody, DefaultMaxBody + 1} {
		k := Key{Operation: "cap", Key: fmt.Sprint(i)}
		res := h.reserve(t, ReserveRequest{Key: k, Fingerprint: fpA})
		body := []byte(strings.Repeat("b", n))
		if err := h.Complete(t.Context(), k, res.Token, Outcome{Status: 200, Body: body}); err != nil {
			t.Fatal(err)
		}
		o := h.get(t, k).Outcome
		stored := n <= DefaultMaxBody
		if o.BodyOmitted == stored || o.BodyLen != int64(n) || (stored && string(o.Body) != string(body)) || (!stored && o.Body != nil) {
			t.Errorf("%d-byte body: omitted %t, len %d, kept %d bytes", n, o.BodyOmitted, o.BodyLen, len(o.Body))
		}
		if o.BodyHash != (Config{}).storedOutcome(Outcome{Body: body}).BodyHash {
			t.Errorf("%d-byte body: hash %s", n, o.BodyHash)
		}
	}
}

// testFencingAfterTakeover is the stale-owner case: owner 1 stalls past
// its lease, owner 2 takes over, and owner 1's token no longer completes,
// renews, fails or records anything.
func testFencingAfterTakeover(t *testing.T, h harness) {
	first := h.reserve(t, ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1", Lease: h.short})
	h.advance(t, h.short)
	second := h.reserve(t, ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w2", KeysHonoured: true})
	wantVerdict(t, second, VerdictResend)
	if second.Token != first.Token+1 {
		t.Fatalf("takeover token %d after %d", second.Token, first.Token)
	}

	ctx := t.Context()
	stale := []struct {
		op  string
		err error
	}{
		{"Complete", h.Complete(ctx, keyA, first.Token, Outcome{Status: 500})},
		{"Renew", h.Renew(ctx, keyA, first.Token, time.Hour)},
		{"Fail", h.Fail(ctx, keyA, first.Token, Failure{})},
	}
	_, err := h.AddAttempt(ctx, keyA, first.Token, "late")
	stale = append(stale, struct {
		op  string
		err error
	}{"AddAttempt", err})
	for _, s := range stale {
		if !errors.Is(s.err, ErrNotOwner) {
			t.Errorf("stale %s: %v, want ErrNotOwner", s.op, s.err)
		}
	}
	if err := h.Complete(ctx, keyA, second.Token, Outcome{Status: 200, Body: []byte("second")}); err != nil {
		t.Fatalf("current owner's Complete: %v", err)
	}
	r := h.get(t, keyA)
	if r.State != StateCompleted || string(r.Outcome.Body) != "second" || r.Owner != "w2" {
		t.Fatalf("record %+v", r)
	}
	// Recovery kept the action's identity and added an attempt.
	if !r.CreatedAt.Equal(first.Record.CreatedAt) || r.Key != keyA || len(r.Attempts) != 2 ||
		r.Attempts[1].Class != "resend" || r.Attempts[1].Owner != "w2" || r.Attempts[1].Token != second.Token {
		t.Fatalf("after recovery: %+v", r)
	}
}

func testLateOwnerMayComplete(t *testing.T, h harness) {
	res := h.reserve(t, ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1", Lease: h.short})
	h.advance(t, h.short)
	if stuck, err := h.Sweep(t.Context(), 0); err != nil || len(stuck) != 1 || stuck[0].Key != keyA {
		t.Fatalf("the lease did not run out: Sweep = %+v, %v", stuck, err)
	}
	if err := h.Complete(t.Context(), keyA, res.Token, Outcome{Status: 200}); err != nil {
		t.Fatalf("Complete by the only owner after its lease: %v", err)
	}
}

func testRenewKeepsLease(t *testing.T, h harness) {
	res := h.reserve(t, ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1", Lease: h.short})
	if err := h.Renew(t.Context(), keyA, res.Token, time.Hour); err != nil {
		t.Fatal(err)
	}
	h.advance(t, h.short)
	other := h.reserve(t, ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w2", KeysHonoured: true})
	wantVerdict(t, other, VerdictPending)
	r := h.get(t, keyA)
	if !r.ExpiresAt.After(r.LeaseUntil) && !r.ExpiresAt.Equal(r.LeaseUntil) {
		t.Fatalf("lease %v outlives the record %v", r.LeaseUntil, r.ExpiresAt)
	}
	if err := h.Renew(t.Context(), keyA, res.Token, -time.Second); !errors.Is(err, ErrInvalid) {
		t.Fatalf("negative lease: %v", err)
	}
}

func testFailedRetriesUncertainHolds(t *testing.T, h harness) {
	ctx := t.Context()
	res := h.reserve(t, ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1"})
	if err := h.Fail(ctx, keyA, res.Token, Failure{Reason: "connection refused"}); err != nil {
		t.Fatal(err)
	}
	if r := h.get(t, keyA); r.State != StateFailed || r.Reason != "connection refused" || !r.LeaseUntil.IsZero() {
		t.Fatalf("after Fail: %+v", r)
	}
	retry := h.reserve(t, ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w2"})
	wantVerdict(t, retry, VerdictRetry)
	if !retry.Send || retry.Token != res.Token+1 || retry.Record.Reason != "" {
		t.Fatalf("retry: %+v", retry)
	}
	if err := h.Fail(ctx, keyA, retry.Token, Failure{EffectPossible: true, Reason: "timeout after send"}); err != nil {
		t.Fatal(err)
	}
	held := h.reserve(t, ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w3"})
	wantVerdict(t, held, VerdictUncertain)
	if !errors.Is(held.Err(), ErrUncertain) || held.Record.State != StateUncertain || held.Record.Reason != "timeout after send" {
		t.Fatalf("held: %+v, %v", held.Record, held.Err())
	}
}

func testAddAttempt(t *testing.T, h harness) {
	res := h.reserve(t, ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1"})
	for i, class := range []string{"status-503", "ok"} {
		a, err := h.AddAttempt(t.Context(), keyA, res.Token, class)
		if err != nil {
			t.Fatal(err)
		}
		if a.N != i+2 || a.Class != class || a.Owner != "w1" || a.Token != res.Token || a.At.Before(res.Record.CreatedAt) {
			t.Fatalf("attempt %+v", a)
		}
	}
	r := h.get(t, keyA)
	var classes []string
	for i, a := range r.Attempts {
		if a.N != i+1 {
			t.Fatalf("attempt numbers %+v", r.Attempts)
		}
		classes = append(classes, a.Class)
	}
	if strings.Join(classes, ",") != "created,status-503,ok" {
		t.Fatalf("history %v", classes)
	}
}

func testNotOwner(t *testing.T, h harness) {
	ctx := t.Context()
	if _, err := h.Get(ctx, keyA); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get on absent: %v", err)
	}
	if err := h.Complete(ctx, keyA, 1, Outcome{}); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("Complete on absent: %v", err)
	}
	res := h.reserve(t, ReserveRequest{Key: keyA, Fingerprint: fpA})
	for _, tok := range []int64{0, res.Token - 1, res.Token + 1} {
		if err := h.Renew(ctx, keyA, tok, 0); !errors.Is(err, ErrNotOwner) {
			t.Errorf("Renew with token %d (current %d): %v", tok, res.Token, err)
		}
	}
}

// testDelayedWritesNothing pins that a rate-limited destination never
// creates, deletes or resets a record.
func testDelayedWritesNothing(t *testing.T, h harness) {
	res := h.reserve(t, ReserveRequest{Key: keyA, Fingerprint: fpA, Limited: true})
	wantVerdict(t, res, VerdictDelayed)
	if !errors.Is(res.Err(), ErrDelayed) || res.Record.Key != keyA || res.Record.State != StateAbsent {
		t.Fatalf("delayed: %+v, %v", res.Record, res.Err())
	}
	if _, err := h.Get(t.Context(), keyA); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a delayed absent action was written: %v", err)
	}
	own := h.reserve(t, ReserveRequest{Key: keyA, Fingerprint: fpA})
	if err := h.Fail(t.Context(), keyA, own.Token, Failure{Reason: "429"}); err != nil {
		t.Fatal(err)
	}
	before := h.get(t, keyA)
	wantVerdict(t, h.reserve(t, ReserveRequest{Key: keyA, Fingerprint: fpA, Limited: true}), VerdictDelayed)
	if after := h.get(t, keyA); !reflect.DeepEqual(after, before) {
		t.Fatalf("delay changed the record:\n%+v\n%+v", before, after)
	}
	wantVerdict(t, h.reserve(t, ReserveRequest{Key: keyA, Fingerprint: fpA}), VerdictRetry)
}

func testSweep(t *testing.T, h harness) {
	ctx := t.Context()
	k := func(s string) Key { return Key{Tenant: "acme", Operation: "sweep", Key: s} }
	own := func(s string, lease time.Duration) int64 {
		return h.reserve(t, ReserveRequest{Key: k(s), Fingerprint: fpA, Owner: s, Lease: lease}).Token
	}
	own("stuck", h.short)
	if err := h.Fail(ctx, k("uncertain"), own("uncertain", time.Hour), Failure{EffectPossible: true}); err != nil {
		t.Fatal(err)
	}
	if err := h.Fail(ctx, k("failed"), own("failed", time.Hour), Failure{}); err != nil {
		t.Fatal(err)
	}
	if err := h.Complete(ctx, k("completed"), own("completed", time.Hour), Outcome{Status: 200}); err != nil {
		t.Fatal(err)
	}
	own("alive", time.Hour)
	h.advance(t, h.short)

	got, err := h.Sweep(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range got {
		names = append(names, r.Key.Key+"="+r.State.String())
	}
	// Oldest lease first: the stuck lease is set; uncertain has none.
	if strings.Join(names, ",") != "uncertain=uncertain,stuck=in-progress" {
		t.Fatalf("Sweep = %v", names)
	}
	if one, err := h.Sweep(ctx, 1); err != nil || len(one) != 1 {
		t.Fatalf("Sweep(1) = %d records, %v", len(one), err)
	}
}

func testReconcile(t *testing.T, h harness) {
	ctx := t.Context()
	k := func(s string) Key { return Key{Tenant: "acme", Operation: "reconcile", Key: s} }
	for _, s := range []string{"done", "never", "unknown", "broken"} {
		h.reserve(t, ReserveRequest{Key: k(s), Fingerprint: fpA, Owner: "dead", Lease: h.short})
	}
	h.advance(t, h.short)
	stuck, err := h.Sweep(ctx, 0)
	if err != nil || len(stuck) != 4 {
		t.Fatalf("Sweep: %d, %v", len(stuck), err)
	}
	var mu sync.Mutex
	asked := map[string]int{}
	fn := func(_ context.Context, r Record) (Resolution, error) {
		mu.Lock()
		asked[r.Key.Key]++
		mu.Unlock()
		switch r.Key.Key {
		case "done":
			return Resolution{State: StateCompleted, Outcome: Outcome{Status: 200, Body: []byte("found")}}, nil
		case "never":
			return Resolution{State: StateFailed, Reason: "provider has no such request"}, nil
		case "unknown":
			return Resolution{State: StateUncertain, Reason: "provider cannot tell"}, nil
		}
		return Resolution{}, errors.New("provider down")
	}
	results := Reconcile(ctx, h.Store, fn, stuck, "reconciler")
	want := map[string]State{"done": StateCompleted, "never": StateFailed, "unknown": StateUncertain, "broken": StateUncertain}
	for _, r := range results {
		if r.Verdict != VerdictReconcile || r.State != want[r.Key.Key] || (r.Err != nil) != (r.Key.Key == "broken") {
			t.Errorf("%s: %+v", r.Key.Key, r)
		}
		if got := h.get(t, r.Key); got.State != want[r.Key.Key] || got.Attempts[len(got.Attempts)-1].Class != "reconcile" {
			t.Errorf("%s: record %+v", r.Key.Key, got)
		}
	}
	wantVerdict(t, h.reserve(t, ReserveRequest{Key: k("done"), Fingerprint: fpA}), VerdictReplayed)
	wantVerdict(t, h.reserve(t, ReserveRequest{Key: k("never"), Fingerprint: fpA}), VerdictRetry)

	// A second pass over the same (now stale) list asks about nothing that
	// is settled or owned by someone else.
	again := Reconcile(ctx, h.Store, fn, stuck, "reconciler")
	for _, r := range again {
		if r.Key.Key == "done" && r.Verdict != VerdictReplayed || r.Key.Key == "never" && r.Verdict != VerdictPending {
			t.Errorf("second pass %s: %+v", r.Key.Key, r)
		}
	}
	if asked["done"] != 1 || asked["never"] != 1 {
		t.Errorf("reconciler asked %v", asked)
	}
}

// testExpiryAfterRetention pins the documented expiry: past its retention
// a record is dropped and the same key runs as a new action.
func testExpiryAfterRetention(t *testing.T, h harness) {
	first := h.reserve(t, ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1", Lease: h.short / 2, Retention: h.short})
	if err := h.Complete(t.Context(), keyA, first.Token, Outcome{Status: 200, Body: []byte("old")}); err != nil {
		t.Fatal(err)
	}
	wantVerdict(t, h.reserve(t, ReserveRequest{Key: keyA, Fingerprint: fpA}), VerdictReplayed)
	h.waitGone(t, keyA)
	if _, err := h.Get(t.Context(), keyA); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after retention: %v", err)
	}
	// Even a different request is no conflict now: it is a new action.
	again := h.reserve(t, ReserveRequest{Key: keyA, Fingerprint: fpB, Owner: "w2"})
	wantVerdict(t, again, VerdictCreated)
	if again.Token == first.Token || again.Record.Outcome != nil || len(again.Record.Attempts) != 1 || again.Record.Fingerprint != fpB {
		t.Fatalf("new action: %+v", again)
	}
	if err := h.Complete(t.Context(), keyA, first.Token, Outcome{Status: 500}); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("the expired incarnation's token completed the new one: %v", err)
	}
}

func testConcurrentReserve(t *testing.T, h harness) {
	const n = 50
	var (
		start   = make(chan struct{})
		wg      sync.WaitGroup
		results = make([]Reservation, n)
		errs    = make([]error, n)
	)
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], errs[i] = h.Reserve(t.Context(), ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: fmt.Sprint("g", i)})
		})
	}
	close(start)
	wg.Wait()
	winners := 0
	for i, res := range results {
		if errs[i] != nil {
			t.Fatalf("goroutine %d: %v", i, errs[i])
		}
		switch res.Verdict {
		case VerdictCreated:
			winners++
		case VerdictPending:
		default:
			t.Errorf("goroutine %d: %s", i, res.Verdict)
		}
	}
	if winners != 1 {
		t.Fatalf("%d goroutines won, want exactly 1", winners)
	}
	if r := h.get(t, keyA); len(r.Attempts) != 1 {
		t.Fatalf("history %+v", r.Attempts)
	}
}

func testInvalidRequests(t *testing.T, h harness) {
	for _, req := range []ReserveRequest{
		{Key: Key{Tenant: "t", Operation: "op"}},
		{Key: keyA, Lease: -time.Second},
		{Key: keyA, Retention: -time.Second},
		{Key: keyA, Lease: time.Microsecond},
	} {
		if _, err := h.Reserve(t.Context(), req); !errors.Is(err, ErrInvalid) {
			t.Errorf("Reserve(%+v): %v, want ErrInvalid", req, err)
		}
	}
}

func testCanceledContext(t *testing.T, h harness) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := h.Reserve(ctx, ReserveRequest{Key: keyA, Fingerprint: fpA}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Reserve: %v", err)
	}
	if _, err := h.Get(t.Context(), keyA); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a canceled Reserve wrote: %v", err)
	}
}
