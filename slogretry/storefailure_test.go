package slogretry_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/slogretry"
)

// A store failure is logged with its error's text at Error, by default:
// the text names the action neither by its ID (an unkeyed hash a reader
// can test guesses against) nor by its idempotency key.
func TestStoreFailureLogNamesNoAction(t *testing.T) {
	ctx := context.Background()
	k := ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-1"}
	m := ledger.NewMemory(ledger.MemoryConfig{})
	res, err := m.Reserve(ctx, ledger.ReserveRequest{Key: k, Fingerprint: "fp", Owner: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	storeErr := m.Complete(ctx, k, res.Token+1, ledger.Outcome{Status: 200})
	if storeErr == nil {
		t.Fatal("Complete under another token succeeded")
	}
	var buf bytes.Buffer
	obs := slogretry.Observer(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	obs.Ledger(retrybudget.LedgerEvent{Action: k, Op: "complete", Err: storeErr})
	if !strings.Contains(buf.String(), "ledger store failed") {
		t.Fatalf("no store failure logged: %s", buf.String())
	}
	for _, leak := range []string{k.ID()[:12], k.IdempotencyKey(), k.Tenant, k.Key} {
		if strings.Contains(buf.String(), leak) {
			t.Errorf("the record names the action (%q): %s", leak, buf.String())
		}
	}
}
