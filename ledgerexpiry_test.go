package retrybudget_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/internal/fakeclock"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/slogretry"
)

// TestLedgerEventReportsExpiry runs one action three times: the second
// call comes past the record's retention (within ExpiryGrace), so its
// LedgerEvent says Expired and slogretry's Observer logs it at Info; the first and
// the third (a replay of the new record) do not.
func TestLedgerEventReportsExpiry(t *testing.T) {
	var effects int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		effects++
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	clock := fakeclock.New(time.Unix(1_000_000, 0))
	store := ledger.NewMemory(ledger.MemoryConfig{Config: ledger.Config{Retention: time.Hour}, Now: clock.Now})
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ids := retrybudget.Identities{ActionKey: []byte("log-action-key-of-the-deployment")}
	var events []retrybudget.LedgerEvent
	tr := retrybudget.New(retrybudget.Config{
		Base:   srv.Client().Transport,
		Ledger: retrybudget.LedgerConfig{Store: store},
		Observer: slogretry.Observer(logger, ids).Join(
			retrybudget.Observer{Ledger: func(ev retrybudget.LedgerEvent) { events = append(events, ev) }}),
	})
	act := retrybudget.Action{Tenant: "acme", Operation: "charge", Key: "order-1"}
	for _, advance := range []time.Duration{0, 90 * time.Minute, time.Minute} {
		clock.Advance(advance)
		req, _ := http.NewRequestWithContext(retrybudget.WithAction(context.Background(), act), "POST", srv.URL+"/v1/charges",
			strings.NewReader(`{"amount":100}`))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if effects != 2 {
		t.Fatalf("effects %d; want 2: past retention the key is new work", effects)
	}
	if len(events) != 3 {
		t.Fatalf("%d ledger events; want 3: %+v", len(events), events)
	}
	for i, want := range []struct {
		v       ledger.Verdict
		expired bool
	}{{ledger.VerdictCreated, false}, {ledger.VerdictCreated, true}, {ledger.VerdictReplayed, false}} {
		if events[i].Verdict != want.v || events[i].Expired != want.expired {
			t.Errorf("event %d: %v expired=%v; want %v expired=%v", i, events[i].Verdict, events[i].Expired, want.v, want.expired)
		}
	}
	var expired []map[string]any
	dec := json.NewDecoder(&logs)
	for dec.More() {
		var r map[string]any
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		if r["expired"] == true {
			expired = append(expired, r)
		}
	}
	id := ids.ActionID(act)
	if len(expired) != 1 || expired[0]["level"] != "INFO" || expired[0]["verdict"] != "created" ||
		expired[0]["action"] != id || expired[0]["tenant"] != nil {
		t.Fatalf("expired records %v; want one INFO created record of action %s without its tenant", expired, id)
	}
}
