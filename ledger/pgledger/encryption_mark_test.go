package pgledger_test

import (
	"errors"
	"testing"

	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger/pgtest"
)

// TestBodyLikeCiphertextReplaysAsStored pins that whether a stored body is
// encrypted is read from the row, not guessed from the data: a store
// without keys replays a body that starts like a ciphertext exactly as it
// stored it, and a sealed row never replays its ciphertext to a store that
// cannot open it.
func TestBodyLikeCiphertextReplaysAsStored(t *testing.T) {
	pool := pgtest.Pool(t)
	plain := newStore(t, pool, pgledger.Config{})
	ctx := t.Context()
	body := []byte("rbenc1:a provider's body")
	res, err := plain.Reserve(ctx, ledger.ReserveRequest{Key: keyA, Fingerprint: "f"})
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Complete(ctx, keyA, res.Token, ledger.Outcome{Status: 200, Body: body}); err != nil {
		t.Fatal(err)
	}
	got, err := plain.Reserve(ctx, ledger.ReserveRequest{Key: keyA, Fingerprint: "f"})
	if err != nil || got.Verdict != ledger.VerdictReplayed || string(got.Record.Outcome.Body) != string(body) {
		t.Fatalf("replay of a body stored plain: %s %+v, %v", got.Verdict, got.Record.Outcome, err)
	}

	sealed := newStore(t, pool, pgledger.Config{Config: ledger.Config{EncryptionKeys: ledger.EncryptionKeys{[]byte("old-aes-256-key-0123456789abcdef")}}})
	k := ledger.Key{Tenant: "acme", Operation: "charge", Key: "sealed"}
	res, err = sealed.Reserve(ctx, ledger.ReserveRequest{Key: k, Fingerprint: "f"})
	if err != nil {
		t.Fatal(err)
	}
	if err := sealed.Complete(ctx, k, res.Token, ledger.Outcome{Status: 200, Body: []byte("secret")}); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Get(ctx, k); !errors.Is(err, ledger.ErrCorrupt) {
		t.Fatalf("a sealed row read without keys: %v, want ErrCorrupt", err)
	}
}
