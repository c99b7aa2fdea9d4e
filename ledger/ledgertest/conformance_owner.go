package ledgertest

// The conformance cases about one owner's life: hold, reject, replay,
// fencing, renewal, failure and history.

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

func testPendingHasRetryHint(t *testing.T, h Harness) {
	lease := 10 * time.Minute
	h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1", Lease: lease})
	res := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w2"})
	wantVerdict(t, res, ledger.VerdictPending)
	if res.RetryAfter <= 0 || res.RetryAfter > lease {
		t.Fatalf("RetryAfter = %s, want in (0, %s]", res.RetryAfter, lease)
	}
	var e *ledger.Error
	if !errors.As(res.Err(), &e) || !errors.Is(res.Err(), ledger.ErrPending) || e.RetryAfter != res.RetryAfter || e.Key != keyA {
		t.Fatalf("Err() = %#v", res.Err())
	}
	if strings.Contains(e.Error(), keyA.Key) {
		t.Errorf("error message %q leaks the raw key", e.Error())
	}
}

func testConflictIsError(t *testing.T, h Harness) {
	h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1"})
	res := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpB, Owner: "w2"})
	wantVerdict(t, res, ledger.VerdictConflict)
	var e *ledger.Error
	if !errors.Is(res.Err(), ledger.ErrConflict) || !errors.As(res.Err(), &e) || e.State != ledger.StateInProgress || e.Verdict != ledger.VerdictConflict {
		t.Fatalf("Err() = %v", res.Err())
	}
}

func testCompleteThenReplay(t *testing.T, h Harness) {
	res := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1"})
	out := ledger.Outcome{
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
	replay := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w2"})
	wantVerdict(t, replay, ledger.VerdictReplayed)
	if replay.Err() != nil || replay.Send || replay.Token != 0 {
		t.Fatalf("replay: Err %v, Send %t, Token %d", replay.Err(), replay.Send, replay.Token)
	}
	got := replay.Record.Outcome
	want := ledger.Config{}.StoredOutcome(out)
	if got == nil || !reflect.DeepEqual(*got, *want) {
		t.Fatalf("replayed outcome %+v, want %+v", got, want)
	}
	if _, ok := got.Header["Set-Cookie"]; ok || got.Header.Get("Authorization") != "" {
		t.Fatal("a credential header was stored")
	}
	if r := h.get(t, keyA); r.State != ledger.StateCompleted || !r.LeaseUntil.IsZero() || r.Owner != "w1" {
		t.Fatalf("record %+v", r)
	}
	if err := h.Complete(t.Context(), keyA, res.Token, out); !errors.Is(err, ledger.ErrNotOwner) {
		t.Fatalf("second Complete: %v, want ledger.ErrNotOwner", err)
	}
}

func testBodyCap(t *testing.T, h Harness) {
	for i, n := range []int{0, ledger.DefaultMaxBody, ledger.DefaultMaxBody + 1} {
		k := ledger.Key{Operation: "cap", Key: fmt.Sprint(i)}
		res := h.reserve(t, ledger.ReserveRequest{Key: k, Fingerprint: fpA})
		body := []byte(strings.Repeat("b", n))
		if err := h.Complete(t.Context(), k, res.Token, ledger.Outcome{Status: 200, Body: body}); err != nil {
			t.Fatal(err)
		}
		o := h.get(t, k).Outcome
		stored := n <= ledger.DefaultMaxBody
		if o.BodyOmitted == stored || o.BodyLen != int64(n) || (stored && string(o.Body) != string(body)) || (!stored && o.Body != nil) {
			t.Errorf("%d-byte body: omitted %t, len %d, kept %d bytes", n, o.BodyOmitted, o.BodyLen, len(o.Body))
		}
		if o.BodyHash != (ledger.Config{}).StoredOutcome(ledger.Outcome{Body: body}).BodyHash {
			t.Errorf("%d-byte body: hash %s", n, o.BodyHash)
		}
	}
}

// testFencingAfterTakeover is the stale-owner case: owner 1 stalls past
// its lease, owner 2 takes over, and owner 1's token no longer completes,
// renews, fails or records anything.
func testFencingAfterTakeover(t *testing.T, h Harness) {
	first := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1", Lease: h.Short})
	h.Advance(t, h.Short)
	second := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w2", KeysHonoured: true})
	wantVerdict(t, second, ledger.VerdictResend)
	if second.Token != first.Token+1 {
		t.Fatalf("takeover token %d after %d", second.Token, first.Token)
	}

	ctx := t.Context()
	stale := []struct {
		op  string
		err error
	}{
		{"Complete", h.Complete(ctx, keyA, first.Token, ledger.Outcome{Status: 500})},
		{"Renew", h.Renew(ctx, keyA, first.Token, time.Hour)},
		{"Fail", h.Fail(ctx, keyA, first.Token, ledger.Failure{})},
	}
	_, err := h.AddAttempt(ctx, keyA, first.Token, "late")
	stale = append(stale, struct {
		op  string
		err error
	}{"AddAttempt", err})
	for _, s := range stale {
		if !errors.Is(s.err, ledger.ErrNotOwner) {
			t.Errorf("stale %s: %v, want ledger.ErrNotOwner", s.op, s.err)
		}
	}
	if err := h.Complete(ctx, keyA, second.Token, ledger.Outcome{Status: 200, Body: []byte("second")}); err != nil {
		t.Fatalf("current owner's Complete: %v", err)
	}
	r := h.get(t, keyA)
	if r.State != ledger.StateCompleted || string(r.Outcome.Body) != "second" || r.Owner != "w2" {
		t.Fatalf("record %+v", r)
	}
	// Recovery kept the action's identity and added an attempt.
	if !r.CreatedAt.Equal(first.Record.CreatedAt) || r.Key != keyA || len(r.Attempts) != 2 ||
		r.Attempts[1].Class != "resend" || r.Attempts[1].Owner != "w2" || r.Attempts[1].Token != second.Token {
		t.Fatalf("after recovery: %+v", r)
	}
}

func testLateOwnerMayComplete(t *testing.T, h Harness) {
	res := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1", Lease: h.Short})
	h.Advance(t, h.Short)
	if stuck, err := h.Sweep(t.Context(), 0); err != nil || len(stuck) != 1 || stuck[0].Key != keyA {
		t.Fatalf("the lease did not run out: Sweep = %+v, %v", stuck, err)
	}
	if err := h.Complete(t.Context(), keyA, res.Token, ledger.Outcome{Status: 200}); err != nil {
		t.Fatalf("Complete by the only owner after its lease: %v", err)
	}
}

func testRenewKeepsLease(t *testing.T, h Harness) {
	res := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1", Lease: h.Short})
	if err := h.Renew(t.Context(), keyA, res.Token, time.Hour); err != nil {
		t.Fatal(err)
	}
	h.Advance(t, h.Short)
	other := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w2", KeysHonoured: true})
	wantVerdict(t, other, ledger.VerdictPending)
	r := h.get(t, keyA)
	if !r.ExpiresAt.After(r.LeaseUntil) && !r.ExpiresAt.Equal(r.LeaseUntil) {
		t.Fatalf("lease %v outlives the record %v", r.LeaseUntil, r.ExpiresAt)
	}
	if err := h.Renew(t.Context(), keyA, res.Token, -time.Second); !errors.Is(err, ledger.ErrInvalid) {
		t.Fatalf("negative lease: %v", err)
	}
}

func testFailedRetriesUncertainHolds(t *testing.T, h Harness) {
	ctx := t.Context()
	res := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1"})
	if err := h.Fail(ctx, keyA, res.Token, ledger.Failure{Reason: "connection refused"}); err != nil {
		t.Fatal(err)
	}
	if r := h.get(t, keyA); r.State != ledger.StateFailed || r.Reason != "connection refused" || !r.LeaseUntil.IsZero() {
		t.Fatalf("after Fail: %+v", r)
	}
	retry := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w2"})
	wantVerdict(t, retry, ledger.VerdictRetry)
	if !retry.Send || retry.Token != res.Token+1 || retry.Record.Reason != "" {
		t.Fatalf("retry: %+v", retry)
	}
	if err := h.Fail(ctx, keyA, retry.Token, ledger.Failure{EffectPossible: true, Reason: "timeout after send"}); err != nil {
		t.Fatal(err)
	}
	held := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w3"})
	wantVerdict(t, held, ledger.VerdictUncertain)
	if !errors.Is(held.Err(), ledger.ErrUncertain) || held.Record.State != ledger.StateUncertain || held.Record.Reason != "timeout after send" {
		t.Fatalf("held: %+v, %v", held.Record, held.Err())
	}
}

func testAddAttempt(t *testing.T, h Harness) {
	res := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1"})
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

func testNotOwner(t *testing.T, h Harness) {
	ctx := t.Context()
	if _, err := h.Get(ctx, keyA); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("Get on absent: %v", err)
	}
	if err := h.Complete(ctx, keyA, 1, ledger.Outcome{}); !errors.Is(err, ledger.ErrNotOwner) {
		t.Fatalf("Complete on absent: %v", err)
	}
	res := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA})
	for _, tok := range []int64{0, res.Token - 1, res.Token + 1} {
		if err := h.Renew(ctx, keyA, tok, 0); !errors.Is(err, ledger.ErrNotOwner) {
			t.Errorf("Renew with token %d (current %d): %v", tok, res.Token, err)
		}
	}
}

// testDelayedWritesNothing pins that a rate-limited destination never
// creates, deletes or resets a record.
func testDelayedWritesNothing(t *testing.T, h Harness) {
	res := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Limited: true})
	wantVerdict(t, res, ledger.VerdictDelayed)
	if !errors.Is(res.Err(), ledger.ErrDelayed) || res.Record.Key != keyA || res.Record.State != ledger.StateAbsent {
		t.Fatalf("delayed: %+v, %v", res.Record, res.Err())
	}
	if _, err := h.Get(t.Context(), keyA); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("a delayed absent action was written: %v", err)
	}
	own := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA})
	if err := h.Fail(t.Context(), keyA, own.Token, ledger.Failure{Reason: "429"}); err != nil {
		t.Fatal(err)
	}
	before := h.get(t, keyA)
	wantVerdict(t, h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Limited: true}), ledger.VerdictDelayed)
	if after := h.get(t, keyA); !reflect.DeepEqual(after, before) {
		t.Fatalf("delay changed the record:\n%+v\n%+v", before, after)
	}
	wantVerdict(t, h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA}), ledger.VerdictRetry)
}

// testHistoryCapped pins that a record keeps only the newest
// DefaultMaxAttempts entries of its history, still numbered from the
// action's first attempt, so a record retried for ever stays bounded.
func testHistoryCapped(t *testing.T, h Harness) {
	res := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1"})
	const sends = ledger.DefaultMaxAttempts + 8
	for i := range sends {
		a, err := h.AddAttempt(t.Context(), keyA, res.Token, "status-503")
		if err != nil {
			t.Fatal(err)
		}
		if a.N != i+2 {
			t.Fatalf("attempt %d numbered %d", i+2, a.N)
		}
	}
	wantNewest := func(step string, last int) {
		t.Helper()
		r := h.get(t, keyA)
		if len(r.Attempts) != ledger.DefaultMaxAttempts {
			t.Fatalf("after %s: %d attempts kept, want %d", step, len(r.Attempts), ledger.DefaultMaxAttempts)
		}
		for i, a := range r.Attempts {
			if want := last - ledger.DefaultMaxAttempts + 1 + i; a.N != want {
				t.Fatalf("after %s: kept attempt %d is N=%d, want %d", step, i, a.N, want)
			}
		}
	}
	wantNewest("the sends", sends+1)
	// Every other write that appends to the history caps it the same way:
	// a failure carrying its send, the takeover that retries, an outcome
	// carrying the last send.
	if err := h.Fail(t.Context(), keyA, res.Token, ledger.Failure{Reason: "503", AttemptClass: "status-503"}); err != nil {
		t.Fatal(err)
	}
	wantNewest("a failure with its send", sends+2)
	retry := h.reserve(t, ledger.ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1"})
	wantVerdict(t, retry, ledger.VerdictRetry)
	wantNewest("the retry's takeover", sends+3)
	if err := h.Complete(t.Context(), keyA, retry.Token, ledger.Outcome{Status: 201, AttemptClass: "status-201"}); err != nil {
		t.Fatal(err)
	}
	wantNewest("an outcome with its send", sends+4)
}
