package retrybudget

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// An Action's idempotency key (a UUIDv5) and its ID are unkeyed hashes of
// its tenant, operation and key, which a reader of a log line can test
// guesses against: the *Error text carries neither, nor the tenant or key.
// Error.Key still holds the key for a caller that asks for it.
func TestErrorTextNamesNoAction(t *testing.T) {
	p := newProvider(t, lost)
	tr, _ := newFakeTransport(Config{MaxAttempts: 1})
	a := Action{Tenant: "acme", Operation: "charge", Key: "order-1"}
	_, err := post(WithAction(context.Background(), a), t, tr, p.URL, nil)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v, want an *Error", err)
	}
	if e.Key != a.IdempotencyKey() {
		t.Errorf("Error.Key %q, want the Action's %q", e.Key, a.IdempotencyKey())
	}
	for _, leak := range []string{a.IdempotencyKey(), a.ID()[:12], a.Tenant, a.Key} {
		if strings.Contains(err.Error(), leak) {
			t.Errorf("%q names the action (%q)", err.Error(), leak)
		}
	}
}
