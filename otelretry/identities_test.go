package otelretry_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/limiter"
	"github.com/retrybudget/retrybudget/otelretry"
	"github.com/retrybudget/retrybudget/slogretry"
)

// TestObserversKeepIdentitiesOut pins that observers keep identities out
// by default: not tenant= nor action= in logs, not the limiter boundary
// (the host and an unkeyed hash of the Authorization header, from which a
// Basic password can be recovered by guessing) in logs, metric labels or
// span attributes, and not the idempotency key on spans. With
// the defaults, one call that goes through the ledger, the limiter, a
// cooldown and a retry leaves none of them in the captured log, metrics
// or spans; the opt-in shows them.
func TestObserversKeepIdentitiesOut(t *testing.T) {
	const (
		tenant    = "acct_7Hq2secret"
		actionKey = "order-4242-card-4242"
		authz     = "Basic YWxpY2U6aHVudGVyMg==" // alice:hunter2
	)
	act := retrybudget.Action{Tenant: tenant, Operation: "charge", Key: actionKey}
	sum := sha256.Sum256([]byte(authz))
	probe, _ := http.NewRequest("POST", "http://example.com/", nil)
	probe.Header.Set("Authorization", authz)
	_, credHash, _ := strings.Cut(limiter.ByCredential()(probe), "#")
	secrets := map[string]string{
		"tenant": tenant, "action key": actionKey, "idempotency key": act.IdempotencyKey(),
		"credential": authz, "unkeyed SHA-256 of the credential": hex.EncodeToString(sum[:])[:16],
		"boundary credential hash": credHash,
	}

	capture := func(ids retrybudget.Identities) string {
		h := newHarness(t, otelretry.Config{Identities: ids})
		var logs bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		srv := server(t, "429:0", "503", "200")
		tr := retrybudget.New(retrybudget.Config{
			Base: srv.Client().Transport, BaseDelay: time.Millisecond, KeysHonoured: true,
			Observer: h.tel.Observer().Join(slogretry.Observer(logger, ids)),
			Limiter:  &stepLimiter{waits: []time.Duration{time.Millisecond}},
			Boundary: limiter.ByCredential(),
			Ledger:   retrybudget.LedgerConfig{Store: ledger.NewMemory(ledger.MemoryConfig{})},
		})
		ctx, parent := h.tp.Tracer("caller").Start(retrybudget.WithAction(context.Background(), act), "charge")
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/charges", strings.NewReader(`{"amount":1999}`))
		req.Header.Set("Authorization", authz)
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		parent.End()

		var out strings.Builder
		out.WriteString(logs.String())
		for name, m := range h.metrics(t) {
			fmt.Fprintf(&out, "%s %+v\n", name, m.Data)
		}
		for _, s := range h.spans.Ended() {
			fmt.Fprintf(&out, "%s %v\n", s.Name(), s.Attributes())
			for _, e := range s.Events() {
				fmt.Fprintf(&out, "%s %v\n", e.Name, e.Attributes)
			}
		}
		return out.String()
	}

	got := capture(retrybudget.Identities{})
	for what, s := range secrets {
		if strings.Contains(got, s) {
			t.Errorf("default output holds the %s %q", what, s)
		}
	}
	if !strings.Contains(got, "boundary") || !strings.Contains(got, "retrybudget.cooldown") {
		t.Fatalf("the capture saw no limiter events; it proves nothing:\n%s", got)
	}
	shown := capture(retrybudget.Identities{ShowIdentities: true})
	for _, what := range []string{"tenant", "action key", "boundary credential hash"} {
		if !strings.Contains(shown, secrets[what]) {
			t.Errorf("ShowIdentities did not show the %s", what)
		}
	}
}

// A budget destination holding a credential hash (limiter.ByCredential as
// budget.Config.Destination) is a metric label and a span event attribute
// only up to its '#', like a boundary, unless identities are shown.
func TestBudgetDestinationKeepsTheCredentialHashOut(t *testing.T) {
	const dest, hash = "api.example.com#5e884898da280471", "5e884898da280471"
	for _, show := range []bool{false, true} {
		h := newHarness(t, otelretry.Config{Identities: retrybudget.Identities{ShowIdentities: show}})
		h.tel.Observer().Budget(retrybudget.BudgetEvent{Destination: dest})
		var out strings.Builder
		for name, m := range h.metrics(t) {
			fmt.Fprintf(&out, "%s %+v\n", name, m.Data)
		}
		if got := strings.Contains(out.String(), hash); got != show {
			t.Errorf("ShowIdentities=%v: credential hash recorded = %v:\n%s", show, got, out.String())
		}
		if !strings.Contains(out.String(), "api.example.com") {
			t.Errorf("ShowIdentities=%v: destination host not recorded:\n%s", show, out.String())
		}
	}
}
