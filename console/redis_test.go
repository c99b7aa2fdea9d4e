package console

import (
	"context"
	"net/http"
	"testing"

	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger"
)

func TestConsoleOnRedisListsAndSettles(t *testing.T) {
	c := redistest.Client(t)
	store, err := ledger.NewRedis(c, ledger.RedisConfig{
		Prefix: redistest.Prefix(t),
		Config: ledger.Config{FingerprintKeys: ledger.FingerprintKeys{redistest.LedgerKey()}},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, store, nil, Config{})
	k := testKey("acme", secretKey)
	hold(t, store, k)
	ref := f.actionRef()
	if code, page := f.do("POST", "/action/"+ref+"/settle", testToken, f.settleForm(ref, true)); code != http.StatusSeeOther {
		t.Fatalf("settle: status %d:\n%s", code, page)
	}
	res, err := store.Reserve(context.Background(), ledger.ReserveRequest{Key: k, Fingerprint: secretFingerprint, Owner: "worker-2"})
	if err != nil || res.Verdict != ledger.VerdictReplayed || res.Record.Outcome.Status != 201 {
		t.Errorf("next Reserve: %v %v, want replayed with status 201", res.Verdict, err)
	}
}
