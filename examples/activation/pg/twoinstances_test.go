package main

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/examples/activation/app"
	"github.com/retrybudget/retrybudget/idempotency"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/ledgertest"
	"github.com/retrybudget/retrybudget/ledger/pgledger/pgtest"
)

// TestTwoInstancesReplayMatrix drives the rows of the README's inbound
// table through two instances of the service on one PostgreSQL: each row
// starts on instance A and is retried on instance B, and the effects are
// counted at the destination, the one place that makes them.
func TestTwoInstancesReplayMatrix(t *testing.T) {
	url := pgtest.URL(t)
	newFleet := func(t *testing.T) *fleet { return newFleetOn(t, url) }
	t.Run("new key, then completed: replayed by the other instance, which answers the Location", func(t *testing.T) {
		f := newFleet(t)
		first := activate(t, f.a, seedKey, seedBody)
		if first.status != http.StatusCreated || first.replayed {
			t.Fatalf("A: %d %s", first.status, first.body)
		}
		again := activate(t, f.b, seedKey, seedBody)
		if again.status != http.StatusCreated || !again.replayed || again.body != first.body ||
			again.header.Get("Location") != first.header.Get("Location") {
			t.Errorf("B: %d replayed=%v %s; A answered %s", again.status, again.replayed, again.body, first.body)
		}
		for _, srv := range []*httptestServer{f.a, f.b} {
			got := call(t, srv, http.MethodGet, first.header.Get("Location"), "token_a", "", "")
			if got.status != http.StatusOK || got.body != first.body {
				t.Errorf("GET Location on %s: %d %s", srv.URL, got.status, got.body)
			}
		}
		if got := call(t, f.b, http.MethodGet, first.header.Get("Location"), "token_b", "", ""); got.status != http.StatusNotFound {
			t.Errorf("GET Location as tenant_b: %d, want 404", got.status)
		}
		wantStats(t, f.stats(t), 1, 1)
		v := records(t, f.b, seedKey)
		if v.Inbound == nil || v.Inbound.State != "completed" || v.Inbound.Status != http.StatusCreated ||
			v.Destination == nil || v.Destination.State != "completed" {
			t.Errorf("records: %+v %+v", v.Inbound, v.Destination)
		}
	})
	t.Run("different fingerprint on the other instance: conflict", func(t *testing.T) {
		f := newFleet(t)
		activate(t, f.a, seedKey, seedBody)
		w := activate(t, f.b, seedKey, body("campaign_19", 5, "audience_28"))
		if w.status != http.StatusUnprocessableEntity || w.problem != idempotency.TypeConflict {
			t.Errorf("B: %d %s", w.status, w.body)
		}
		wantStats(t, f.stats(t), 1, 1)
	})
	t.Run("in progress on the other instance: pending, then replayed", func(t *testing.T) {
		f := newFleet(t)
		const key = "tenant_a:campaign_20:revision_1"
		b := body("campaign_20", 1, app.SlowAudience)
		first := make(chan answer, 1)
		go func() { first <- activate(t, f.a, key, b) }()
		select {
		case <-f.entered:
		case <-time.After(guardTimeout):
			t.Fatal("the slow sync never started")
		}
		w := activate(t, f.b, key, b)
		close(f.release)
		ra, err := strconv.Atoi(w.header.Get("Retry-After"))
		if w.status != http.StatusConflict || w.problem != idempotency.TypePending || err != nil || ra < 1 || ra > int(app.InboundLease/time.Second) {
			t.Errorf("B while A runs: %d %v %s", w.status, w.header, w.body)
		}
		a := <-first
		if a.status != http.StatusCreated {
			t.Fatalf("A: %d %s", a.status, a.body)
		}
		if w := activate(t, f.b, key, b); w.status != http.StatusCreated || !w.replayed || w.body != a.body {
			t.Errorf("B after: %d replayed=%v %s", w.status, w.replayed, w.body)
		}
		wantStats(t, f.stats(t), 1, 1)
	})
	t.Run("failed before any effect (destination rate limited): runs again on the other instance", func(t *testing.T) {
		f := newFleet(t)
		const key = "tenant_a:campaign_limited:revision_1"
		b := body(app.LimitedCampaign, 1, "audience_28")
		for i, srv := range []*httptestServer{f.a, f.b} {
			w := activate(t, srv, key, b)
			if w.status != http.StatusServiceUnavailable || w.problem != app.TypeDestinationRateLimited || w.replayed {
				t.Errorf("attempt %d: %d %v %s", i+1, w.status, w.header, w.body)
			}
			wantStats(t, f.stats(t), i+1, 0)
		}
		if n := f.activationRows(t); n != 0 {
			t.Errorf("%d activations stored, want 0", n)
		}
	})
	t.Run("missing and malformed keys: 400, nothing runs", func(t *testing.T) {
		f := newFleet(t)
		for _, key := range []string{"", `"unterminated`} {
			w := activate(t, f.b, key, seedBody)
			if w.status != http.StatusBadRequest || (w.problem != idempotency.TypeMissingKey && w.problem != idempotency.TypeMalformedKey) {
				t.Errorf("key %q: %d %s", key, w.status, w.body)
			}
		}
		wantStats(t, f.stats(t), 0, 0)
	})
	t.Run("tenants never share a key", func(t *testing.T) {
		f := newFleet(t)
		a := activate(t, f.a, seedKey, seedBody)
		b := call(t, f.b, http.MethodPost, "/api/v1/campaign-activations", "token_b", seedKey, seedBody)
		if a.status != http.StatusCreated || b.status != http.StatusCreated || b.replayed || a.header.Get("Location") == b.header.Get("Location") {
			t.Errorf("tenant_a %d %s; tenant_b %d replayed=%v %s", a.status, a.body, b.status, b.replayed, b.body)
		}
		wantStats(t, f.stats(t), 2, 2)
	})
	t.Run("commit refused after the effect, retried on the other instance: runs again, 1 effect", func(t *testing.T) {
		f := newFleet(t)
		// The first commit that inserts an activation is refused by the
		// server (a deferred constraint trigger; nextval is outside any
		// transaction, so the refusal happens once).
		for _, q := range []string{
			`CREATE SEQUENCE refusals`,
			`CREATE FUNCTION refuse_once() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN
				IF nextval('refusals') = 1 THEN RAISE EXCEPTION 'commit refused (test)'; END IF;
				RETURN NULL;
			END $$`,
			`CREATE CONSTRAINT TRIGGER refuse AFTER INSERT ON activation_activations
				DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse_once()`,
		} {
			if _, err := f.direct.Exec(t.Context(), q); err != nil {
				t.Fatal(err)
			}
		}
		first := activate(t, f.a, seedKey, seedBody)
		if first.status != http.StatusServiceUnavailable {
			t.Fatalf("A: %d %s; want 503", first.status, first.body)
		}
		if n := f.activationRows(t); n != 0 {
			t.Fatalf("%d activations after a refused commit, want 0", n)
		}
		retry := activate(t, f.b, seedKey, seedBody)
		if retry.status != http.StatusCreated || retry.replayed {
			t.Fatalf("B: %d replayed=%v %s; want 201, run again", retry.status, retry.replayed, retry.body)
		}
		wantStats(t, f.stats(t), 1, 1)
		if n := f.activationRows(t); n != 1 {
			t.Errorf("%d activations, want 1", n)
		}
	})
	t.Run("commit lost before it ran, retried on the other instance: runs again, 1 effect", func(t *testing.T) {
		f := newFleet(t)
		f.proxy.Arm(pgtest.CutBeforeCommit)
		first := activate(t, f.a, seedKey, seedBody)
		if f.proxy.Cuts() != 1 || first.status != http.StatusServiceUnavailable {
			t.Fatalf("A: %d cuts, answer %d %s; want 1 cut and 503", f.proxy.Cuts(), first.status, first.body)
		}
		if n := f.activationRows(t); n != 0 {
			t.Fatalf("%d activations after a commit that never ran, want 0", n)
		}
		retry := activate(t, f.b, seedKey, seedBody)
		if retry.status != http.StatusCreated || retry.replayed {
			t.Fatalf("B: %d replayed=%v %s; want 201, run again", retry.status, retry.replayed, retry.body)
		}
		if again := activate(t, f.a, seedKey, seedBody); again.status != http.StatusCreated || !again.replayed || again.body != retry.body {
			t.Errorf("A after: %d replayed=%v %s", again.status, again.replayed, again.body)
		}
		// The destination call was recorded completed by A outside the
		// transaction: B replays its answer, and the sync is the same.
		wantStats(t, f.stats(t), 1, 1)
		if n := f.activationRows(t); n != 1 {
			t.Errorf("%d activations, want 1", n)
		}
	})
	t.Run("commit answer lost after the effect, retried on the other instance: replayed, 1 effect", func(t *testing.T) {
		f := newFleet(t)
		f.proxy.Arm(pgtest.CutAfterCommit)
		first := activate(t, f.a, seedKey, seedBody)
		if f.proxy.Cuts() != 1 || first.status != http.StatusServiceUnavailable {
			t.Fatalf("A: %d cuts, answer %d %s; want 1 cut and 503", f.proxy.Cuts(), first.status, first.body)
		}
		retry := activate(t, f.b, seedKey, seedBody)
		if retry.status != http.StatusCreated || !retry.replayed {
			t.Fatalf("B: %d replayed=%v %s; want the stored 201", retry.status, retry.replayed, retry.body)
		}
		if got := call(t, f.b, http.MethodGet, retry.header.Get("Location"), "token_a", "", ""); got.status != http.StatusOK || got.body != retry.body {
			t.Errorf("GET Location on B: %d %s", got.status, got.body)
		}
		wantStats(t, f.stats(t), 1, 1)
		if n := f.activationRows(t); n != 1 {
			t.Errorf("%d activations, want 1", n)
		}
	})
	t.Run("owner died after the effect: the other instance runs it after the lease, 1 effect", func(t *testing.T) {
		f := newFleet(t)
		// A dead instance: it reserved the action, marked it running,
		// synced under the derived key, and died before recording anything
		// else.
		inbound := ledger.Key{Tenant: "tenant_a", Operation: "POST /api/v1/campaign-activations", Key: seedKey}
		res, err := f.store.Reserve(t.Context(), ledger.ReserveRequest{Key: inbound, Fingerprint: fingerprintOf(t, seedBody),
			Owner: "dead-instance", Lease: 300 * time.Millisecond, MarksSending: true})
		if err != nil || res.Verdict != ledger.VerdictCreated {
			t.Fatalf("reserve: %v %v", res.Verdict, err)
		}
		if err := f.store.MarkSending(t.Context(), inbound, res.Token); err != nil {
			t.Fatal(err)
		}
		step, _ := idempotency.Outbound(inbound, res.Record.CreatedAt, "destination")
		deadSync(t, f, step.IdempotencyKey())

		var w answer
		ledgertest.Poll(t, "the dead owner's lease to end", func() bool {
			w = activate(t, f.b, seedKey, seedBody)
			return w.status != http.StatusConflict
		})
		if w.status != http.StatusCreated || w.replayed {
			t.Fatalf("B: %d %s", w.status, w.body)
		}
		wantStats(t, f.stats(t), 2, 1)
		v := records(t, f.a, seedKey)
		if v.Inbound == nil || v.Inbound.State != "completed" || len(v.Inbound.Attempts) < 2 || v.Inbound.Attempts[0].Owner != "dead-instance" {
			t.Errorf("inbound record %+v", v.Inbound)
		}
	})
}

// httptestServer names the instances' type in the table loops.
type httptestServer = httptest.Server

// deadSync syncs under key as the dead instance did.
func deadSync(t *testing.T, f *fleet, key string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, f.dest.URL+"/v1/audiences/audience_28/syncs",
		strings.NewReader(`{"activation_id":"x","campaign_id":"campaign_19","revision":4}`))
	req.Header.Set("Idempotency-Key", key)
	resp, err := f.dest.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("dead instance's sync: %d", resp.StatusCode)
	}
}

// fingerprintOf is the fingerprint the middleware computes for an
// activation request with body b.
func fingerprintOf(t *testing.T, b string) string {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/api/v1/campaign-activations", nil)
	return ledger.Fingerprint(r.Method, r.URL, r.Header, nil, []byte(b))
}
