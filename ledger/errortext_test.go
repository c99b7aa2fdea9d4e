package ledger

import (
	"context"
	"strings"
	"testing"
)

// An action's ID is an unkeyed hash of its tenant, operation and key, which
// a reader of a log line can test guesses against (a tenant and an order
// number are easily guessed): no error text of the ledger carries any of
// it. Error.Key still names the action, for a caller that asks.
func TestErrorTextsNameNoAction(t *testing.T) {
	ctx := context.Background()
	k := Key{Tenant: "acme", Operation: "charge", Key: "order-1"}
	m := NewMemory(MemoryConfig{})
	res, err := m.Reserve(ctx, ReserveRequest{Key: k, Fingerprint: "fp", Owner: "w1", Instance: "run-1"})
	if err != nil || res.Token == 0 {
		t.Fatalf("Reserve: %+v, %v", res, err)
	}
	pending, err := m.Reserve(ctx, ReserveRequest{Key: k, Fingerprint: "fp", Owner: "w2"})
	if err != nil {
		t.Fatal(err)
	}
	notOwned := m.Complete(ctx, k, res.Token+1, Outcome{Status: 200})
	keys := EncryptionKeys{make([]byte, 32)}
	_, notSealed := keys.OpenStored(k, "outcome", []byte("plain"), true)
	_, unopened := keys.OpenStored(k, "outcome", []byte(sealedOutcomePrefix+strings.Repeat("x", 40)), true)
	for name, err := range map[string]error{
		"pending":         pending.Err(),
		"not owner":       notOwned,
		"owner shared":    CheckOwnerShared(ctx, m, k, "w1", "run-2", notOwned),
		"not sealed":      notSealed,
		"opens with none": unopened,
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		text := err.Error()
		for _, leak := range []string{k.ID()[:12], k.Tenant, k.Key} {
			if strings.Contains(text, leak) {
				t.Errorf("%s: %q names the action (%q)", name, text, leak)
			}
		}
	}
}
